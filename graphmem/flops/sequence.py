"""Sequence models: RNN/GRU/LSTM cells over the whole sequence, attention, rotary embeddings.

Recurrent ops count every one of the T steps, per direction (one ONNX node is one layer). Dense
attention counts the full score matrix B·heads·S_q·L (L = total key length, past included):
QKᵀ and P·V are MACs; scaling, masking, softcap and softmax are per-score FLOPs.
"""

from __future__ import annotations

from graphmem.flops.cost import Cost, MissingInfo, NodeView, Rule, counted, numel, rule
from graphmem.flops.families import activation_cost

__all__ = [
    "recurrent",
    "rnn",
    "gru",
    "lstm",
    "dynamic_quantize_lstm",
    "multi_head",
    "decoder_masked_multi_head_attention",
    "onnx_attention",
    "ms_attention",
    "multi_head_attention",
    "group_query_attention",
    "rotary_embedding",
    "gemma_rotary_embedding",
    "linear_attention",
    "attention_cost",
    "SOFTMAX_PER_SCORE",
]

#: Softmax FLOPs per element (max, subtract, exp, sum, divide).
SOFTMAX_PER_SCORE = 5

def _step_elementwise(cell: str, gates: int, h: int, acts: tuple[int, ...], bias: bool, clip: bool, peep: bool) -> int:
    """Elementwise FLOPs of one cell step for one batch row and one direction.

    Gate pre-activations: X·W + H·R (+ Wb + Rb): 1 add (3 with bias) per gate element, 2 more
    with ``clip``. RNN: f(gate). GRU: f(z), f(r), g(h̃), r⊙(...), H = (1-z)⊙h̃ + z⊙H (4).
    LSTM: f(i, f, o), g(c̃), C = f⊙C + i⊙c̃ (3), H = o⊙h(C) (1 + h), peepholes 2 per gate (3 gates).
    """
    per_gate = (3 if bias else 1) + (2 if clip else 0)
    flops = gates * h * per_gate
    if cell == "RNN":
        return flops + h * acts[0]
    if cell == "GRU":
        return flops + 2 * h * acts[0] + h * acts[1] + h + 4 * h
    return flops + 3 * h * acts[0] + h * acts[1] + 3 * h + h * acts[2] + h + (6 * h if peep else 0)


def recurrent(cell: str, gates: int, activations: tuple[str, ...], *, integer_matmuls: bool = False) -> Rule:
    """RNN, GRU, LSTM cells (``cell``, with ``gates`` gates and these default ``activations`` per
    direction): every step of T, per direction; ``integer_matmuls``: the matmuls run in integers
    (DynamicQuantizeLSTM), booked as int_ops.

    MACs per step, batch row and direction = gates·H·(I + H) (input and recurrent matmuls).
    ``sequence_lens`` may stop rows early at run time: the count is then an upper bound.
    """

    @rule
    def recurrent_rule(node: NodeView) -> Cost:
        x = node.in_shape(0)
        w = node.in_shape(1)
        t, b = (x[1], x[0]) if node.attr_int("layout", 0) == 1 else (x[0], x[1])
        i = x[2]
        hidden = node.attr_int("hidden_size", 0) or node.in_shape(2)[-1]
        dirs = w[0]
        names = node.attr_strs("activations") or activations * dirs
        per_dir = len(names) // dirs if dirs else 0
        macs = t * b * dirs * gates * hidden * (i + hidden)
        flops = 2 * macs
        for d in range(dirs):
            acts = tuple(activation_cost(n) for n in names[d * per_dir : (d + 1) * per_dir])
            if len(acts) < len(activations):
                raise MissingInfo(f"{node.op_type} needs {len(activations)} activations per direction")
            step = _step_elementwise(
                cell,
                gates,
                hidden,
                acts,
                bias=node.has_input(3),
                clip="clip" in node.attrs,
                peep=node.has_input(7) and cell != "RNN",
            )
            flops += t * b * step
        if integer_matmuls:
            return counted(flops=flops - 2 * macs, int_ops=2 * macs, macs=macs)
        return counted(flops=flops, macs=macs)

    return recurrent_rule


rnn = recurrent("RNN", 1, ("Tanh",))
gru = recurrent("GRU", 3, ("Sigmoid", "Tanh"))
lstm = recurrent("LSTM", 4, ("Sigmoid", "Tanh", "Tanh"))
dynamic_quantize_lstm = recurrent("LSTM", 4, ("Sigmoid", "Tanh", "Tanh"), integer_matmuls=True)


def attention_cost(
    *, scores: int, d_qk: int, d_v: int, per_score: int
) -> tuple[int, int]:
    """(flops, macs) of dense attention over ``scores`` = B·heads·S_q·L score elements."""
    macs = scores * (d_qk + d_v)
    return 2 * macs + scores * per_score, macs


@rule
def onnx_attention(node: NodeView) -> Cost:
    """ONNX Attention (opset 23+): Q (B, Hq, Sq, D) or (B, Sq, Hq·D); K/V likewise; past caches.

    Per score: scale 1, mask 1 (attn_mask or is_causal), softcap 3 (div, tanh, mul), softmax 5.
    """
    q = node.in_shape(0)
    k = node.in_shape(1)
    v = node.in_shape(2)
    if len(q) == 4:
        b, hq, sq, d_qk = q
    else:
        hq = node.attr_int("q_num_heads", 0)
        if hq <= 0:
            raise MissingInfo("q_num_heads missing for 3-D inputs")
        b, sq, d_qk = q[0], q[1], q[2] // hq
    if len(v) == 4:
        d_v = v[3]
    else:
        hkv = node.attr_int("kv_num_heads", 0)
        if hkv <= 0:
            raise MissingInfo("kv_num_heads missing for 3-D inputs")
        d_v = v[2] // hkv
    present = node.known_out(1)
    if present is not None and len(present) == 4:
        total = present[2]
    else:
        s_kv = k[2] if len(k) == 4 else k[1]
        past = node.known_in(4) if node.has_input(4) else None
        if node.has_input(4) and past is None:
            raise MissingInfo()
        total = s_kv + (past[2] if past is not None else 0)
    per_score = 1 + SOFTMAX_PER_SCORE
    if node.has_input(3) or node.attr_int("is_causal", 0):
        per_score += 1
    if node.attr_float("softcap", 0.0) > 0:
        per_score += 3
    flops, macs = attention_cost(scores=b * hq * sq * total, d_qk=d_qk, d_v=d_v, per_score=per_score)
    return counted(flops=flops, macs=macs)


def _rotary_flops(elements: int) -> int:
    """RoPE: per rotated pair 4 mul + 2 add: 3 FLOPs per rotated element."""
    return 3 * elements


@rule
def ms_attention(node: NodeView) -> Cost:
    """com.microsoft Attention / QAttention / DecoderMaskedSelfAttention: QKV projection + MHA.

    X (B, S, in); weights (in, q + k + v hidden); past (2, B, N, P, H); present (2, B, N, L, H).
    Projection MACs = B·S·in·(q+k+v); bias 1/element. QAttention runs the projection in integers
    (2 int_ops per MAC) and dequantizes its output (1 mul per element).
    """
    quantized = node.op_type == "QAttention"
    x = node.in_shape(0)
    w = node.in_shape(1)
    n_heads = node.attr_int("num_heads", 0)
    if n_heads <= 0:
        raise MissingInfo("num_heads missing")
    b, s = x[0], x[1]
    sizes = node.attr_ints("qkv_hidden_sizes")
    q_h, _, v_h = sizes if len(sizes) == 3 else (w[1] // 3, w[1] // 3, w[1] // 3)
    proj_macs = b * s * w[0] * w[1]
    proj_out = b * s * w[1]
    past_index = 8 if quantized else 4
    present = node.known_out(1)
    if present is not None and len(present) == 5:
        total = present[3]
    elif node.has_input(past_index):
        total = s + node.in_shape(past_index)[3]
    else:
        total = s
    per_score = 1 + SOFTMAX_PER_SCORE
    mask_inputs = (5,) if quantized else (3, 5)
    per_score += sum(1 for i in mask_inputs if node.has_input(i))
    per_score += node.attr_int("unidirectional", 0)
    scores = b * n_heads * s * total
    flops, macs = attention_cost(
        scores=scores, d_qk=q_h // n_heads, d_v=v_h // n_heads, per_score=per_score
    )
    if node.has_input(2):
        flops += proj_out
    if node.attr_int("do_rotary", 0):
        flops += _rotary_flops(2 * b * s * q_h)
    if quantized:
        return counted(flops=flops + proj_out, macs=macs + proj_macs, int_ops=2 * proj_macs)
    return counted(flops=flops + 2 * proj_macs, macs=macs + proj_macs)


def multi_head(*, past_key: int, key_padding_mask: int, attention_bias: int, bias: int) -> Rule:
    """com.microsoft MultiHeadAttention / DecoderMaskedMultiHeadAttention (projections outside),
    with their inputs at these positions.

    Output (B, Sq, v_hidden). Key length L: present_key (B, N, L, H) when known, else key
    (B, L, hidden) plus past_key, (B, N, L, H), or packed KV (B, L, N, 2, H); packed QKV query
    (B, S, N, 3, H). The optional bias adds 1 per element of Q, K and V.
    """

    @rule
    def multi_head_rule(node: NodeView) -> Cost:
        n_heads = node.attr_int("num_heads", 0)
        if n_heads <= 0:
            raise MissingInfo("num_heads missing")
        q = node.in_shape(0)
        b, sq = q[0], q[1]
        d_qk = q[4] if len(q) == 5 else q[2] // n_heads
        y = node.known_out(0)
        if y is not None:
            d_v = y[2] // n_heads
        elif len(q) == 5:
            d_v = q[4]
        else:
            v = node.in_shape(2)
            d_v = v[3] if len(v) == 4 else v[2] // n_heads
        present = node.known_out(1)
        key = node.known_in(1) if node.has_input(1) else None
        if node.has_input(1) and key is None:
            raise MissingInfo()
        if present is not None and len(present) == 4:
            total = present[2]
        elif key is not None and len(key) == 4:
            total = key[2]
        else:
            new = key[1] if key is not None else sq
            past = node.known_in(past_key) if node.has_input(past_key) else None
            if node.has_input(past_key) and past is None:
                raise MissingInfo()
            total = new + (past[2] if past is not None else 0)
        per_score = 1 + SOFTMAX_PER_SCORE
        per_score += sum(1 for i in (key_padding_mask, attention_bias) if node.has_input(i))
        per_score += node.attr_int("unidirectional", 0)
        flops, macs = attention_cost(scores=b * n_heads * sq * total, d_qk=d_qk, d_v=d_v, per_score=per_score)
        if node.has_input(bias):
            flops += sum(numel(node.in_shape(i)) for i in (0, 1, 2) if node.has_input(i))
        return counted(flops=flops, macs=macs)

    return multi_head_rule


multi_head_attention = multi_head(past_key=6, key_padding_mask=4, attention_bias=5, bias=3)
decoder_masked_multi_head_attention = multi_head(past_key=5, key_padding_mask=3, attention_bias=4, bias=10)


@rule
def group_query_attention(node: NodeView) -> Cost:
    """com.microsoft GroupQueryAttention: N query heads sharing kv_num_heads K/V heads.

    Output (B, S, N·H); L = present_key's length (B, kvN, L, H) — the buffer length when past and
    present share a buffer, an upper bound. Per score: scale, causal mask, softmax (+ softcap 3,
    attention_bias 1); rotary 3 FLOPs per rotated Q and K element.
    """
    n_heads = node.attr_int("num_heads", 0)
    kv_heads = node.attr_int("kv_num_heads", 0)
    if n_heads <= 0 or kv_heads <= 0:
        raise MissingInfo("num_heads / kv_num_heads missing")
    q = node.in_shape(0)
    b, s = q[0], q[1]
    packed = not node.has_input(1)  # query holds Q, K and V: (N + 2·kvN) heads
    h = q[2] // (n_heads + 2 * kv_heads if packed else n_heads)
    present = node.known_out(1)
    if present is not None and len(present) == 4:
        total = present[2]
    elif node.has_input(3):
        total = node.in_shape(3)[2] + s
    else:
        total = s
    per_score = 1 + SOFTMAX_PER_SCORE + node.attr_int("causal", 1)
    if node.attr_float("softcap", 0.0) > 0:
        per_score += 3
    if node.has_input(10):
        per_score += 1
    flops, macs = attention_cost(scores=b * n_heads * s * total, d_qk=h, d_v=h, per_score=per_score)
    if node.attr_int("do_rotary", 0):
        flops += _rotary_flops(b * s * (n_heads + kv_heads) * h)
    return counted(flops=flops, macs=macs)


@rule
def rotary_embedding(node: NodeView) -> Cost:
    """RotaryEmbedding (ONNX opset 23 and com.microsoft): 3 FLOPs per rotated element.

    X is (B, N, S, H) or (B, S, N·H); ``rotary_embedding_dim`` (0: the whole head) limits the
    rotated part of each head. A 3-D input without ``num_heads`` is rotated whole.
    """
    x = node.in_shape(0)
    rot = node.attr_int("rotary_embedding_dim", 0)
    if len(x) == 4:
        head = x[-1]
        rows = numel(x) // head
    else:
        n_heads = node.attr_int("num_heads", 0)
        if n_heads <= 0:
            return counted(flops=_rotary_flops(numel(x)))
        head = x[-1] // n_heads
        rows = numel(x) // head
    rot = head if rot <= 0 else min(rot, head)
    return counted(flops=_rotary_flops(rows * rot))


@rule
def gemma_rotary_embedding(node: NodeView) -> Cost:
    """GemmaRotaryEmbedding: sin and cos of emb, then q·cos + q_rot·sin (3/element) for q and k."""
    emb = numel(node.in_shape(0))
    return counted(flops=2 * emb + 3 * (numel(node.in_shape(1)) + numel(node.in_shape(3))))


@rule
def linear_attention(node: NodeView) -> Cost:
    """ONNX LinearAttention (opset 27): a recurrent state S (dk × dv) per KV head and token.

    Per token and KV head: k⊗v into S (dk·dv MACs); delta rules add Sᵀk (dk·dv MACs) and 2·dv;
    gated rules decay S (dk·dv + 1 exp). Per token and query head: qᵀS (dk·dv MACs), scale dv.
    """
    q = node.in_shape(0)
    v = node.in_shape(2)
    hq = node.attr_int("q_num_heads", 0)
    hkv = node.attr_int("kv_num_heads", 0)
    if hq <= 0 or hkv <= 0:
        raise MissingInfo("q_num_heads / kv_num_heads missing")
    b, t = q[0], q[1]
    dk, dv = q[2] // hq, v[2] // hkv
    update = node.attr_str("update_rule", "gated_delta")
    delta = int("delta" in update)
    gated = int("gated" in update)
    macs = b * t * (hkv * dk * dv * (1 + delta) + hq * dk * dv)
    flops = 2 * macs + b * t * hkv * (gated * (dk * dv + 1) + delta * 2 * dv) + b * t * hq * dv
    return counted(flops=flops, macs=macs)

