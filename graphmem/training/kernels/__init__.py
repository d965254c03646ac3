"""The CPU kernels a PyTorch training step runs, as far as their temporaries go: oneDNN's and
ATen's buffers beyond a kernel's outputs (:mod:`.workspace` fp32, :mod:`.halfconv` autocast
convolutions, :mod:`.onednn_rnn` the bf16 LSTM)."""
