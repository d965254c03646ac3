"""Save a tiny random-weight Hugging Face model folder (run inside a tool's venv).

    .cache/venvs/NAME/bin/python scripts/_corpus_venv.py llama|gpt2 DIR

Used by scripts/collect_models.py before optimum's exporter and onnxruntime-genai's model
builder, which read a local folder (config, safetensors weights, tokenizer). The weights are
random from a fixed seed; nothing is downloaded. The tokenizer is a word-level one over the
model's vocabulary built with the ``tokenizers`` library (the builder insists on loading one).
"""

from __future__ import annotations

import sys

VOCAB = 1000


def save_tokenizer(folder: str) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {f"t{i}": i for i in range(3, VOCAB)} | {"<unk>": 0, "<s>": 1, "</s>": 2}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    fast.save_pretrained(folder)


def save_model(kind: str, folder: str) -> None:
    import torch

    torch.manual_seed(0)
    if kind == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                          bos_token_id=1, eos_token_id=2)
        model = LlamaForCausalLM(cfg)
    elif kind == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        cfg = GPT2Config(vocab_size=VOCAB, n_embd=128, n_layer=2, n_head=4, n_positions=512, bos_token_id=1, eos_token_id=2)
        model = GPT2LMHeadModel(cfg)
    else:
        raise SystemExit(f"unknown kind {kind!r} (llama or gpt2)")
    model.save_pretrained(folder)
    save_tokenizer(folder)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    save_model(sys.argv[1], sys.argv[2])
