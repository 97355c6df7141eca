#!/usr/bin/python3
"""Builds ONNX model folders of the demo transformer for transformers.js.

    /usr/bin/python3 scripts/make_onnx_model.py --weights TMPDIR --out DIR
    /usr/bin/python3 scripts/make_onnx_model.py --shape smollm2-135m --out DIR

Run by scripts/make-model.mjs, which dumps demo/model.js's weights into
TMPDIR (weights.json + weights.bin). Writes DIR/rlxkv-demo/ (float32 KV) and
DIR/rlxkv-demo-f16kv/ (float16 past/present KV, Cast to float32 inside), each
with config.json, generation_config.json, tokenizer.json,
tokenizer_config.json and onnx/model.onnx.

With --shape smollm2-135m (no --weights) it writes DIR/rlxkv-smollm2-135m-shape/
instead: a decoder of SmolLM2-135M's shape (30 layers, hidden 576, 9 query
heads and 3 KV heads of 64, SwiGLU MLP of 1536, RoPE theta 100000) with
random weights (numpy, fixed seed: not a trained model, its tokens are
noise), float32 KV, and the same byte-level tokenizer (vocab 257: 256 bytes
and '<s>'), for timing a real model's compute and KV size.

The graph computes what demo/model.js computes, in float32 (RoPE from
tables, for positions below 262144): a 'llama'-typed decoder with the I/O names
transformers.js expects (input_ids, attention_mask, position_ids and
past_key_values.N.key/value in; logits and present.N.key/value out; KV as
[batch, heads, seq, head_dim]).

With --kind NAME (repeatable; lfm2, qwen3_5, gemma3, granite4h) it writes tiny
hybrid decoders with random weights instead, each as DIR/rlxkv-NAME/ (float32
caches) and DIR/rlxkv-NAME-f16kv/ (every cache tensor float16): an LFM2-like
'lfm2' (conv, full and sliding attention layers), a Qwen3.5-like 'qwen3_5'
(linear attention layers with conv and recurrent states, a full attention
layer; embed_tokens.onnx + decoder_model_merged.onnx, text only), a
Gemma3-like 'gemma3_text' (sliding and global attention) and a Granite-4.0-H-
like 'granitemoehybrid' (Mamba-2 layers with conv and SSM states, a NoPE
attention layer; no position_ids input). See HYBRID_KINDS below.
Needs python3-onnx (onnx.helper) and numpy; opset 14, IR version 7.
"""
import argparse
import json
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 14
IR_VERSION = 7
NEG = -1e9  # masked attention scores (finite: a fully masked row stays NaN-free)
ROPE_LO, ROPE_HI = 256, 1024  # RoPE tables: positions below 256 * 1024
MAX_POSITIONS = ROPE_LO * ROPE_HI


def load_weights(folder):
    with open(os.path.join(folder, 'weights.json')) as f:
        manifest = json.load(f)
    with open(os.path.join(folder, 'weights.bin'), 'rb') as f:
        blob = f.read()
    arrays = {}
    for t in manifest['tensors']:
        dt = {'float32': '<f4', 'float64': '<f8'}[t['dtype']]
        a = np.frombuffer(blob, dtype=dt, count=t['bytes'] // np.dtype(dt).itemsize, offset=t['offset'])
        arrays[t['name']] = a.reshape(t['shape'])
    return manifest, arrays


class Graph:
    """Collects nodes and initializers; every op returns its output name."""

    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type, inputs, name=None, **attrs):
        self.n += 1
        out = name or f'{op_type.lower()}_{self.n}'
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=f'n{self.n}_{op_type}', **attrs))
        return out



def rope_angles(g, positions, inv_freq, prefix='rope'):
    """cos and sin of p * f ([B, S, HALF]) for int64 positions p ([B, S]).

    By the angle-addition formulas from two float32 tables, p = ROPE_LO * a + b:
    exact to float32 rounding at every position below ROPE_LO * ROPE_HI. (A
    float32 angle p * f would lose ~1e-4 rad by position 1000, and
    onnxruntime-web 1.31's wasm has no float64 kernels.)"""
    inv_freq = inv_freq.astype(np.float64)
    lo_angles = np.arange(ROPE_LO, dtype=np.float64)[:, None] * inv_freq[None, :]
    hi_angles = (ROPE_LO * np.arange(ROPE_HI, dtype=np.float64))[:, None] * inv_freq[None, :]
    f32 = lambda a: a.astype(np.float32)
    cos_lo, sin_lo = g.const(f'{prefix}_cos_lo', f32(np.cos(lo_angles))), g.const(f'{prefix}_sin_lo', f32(np.sin(lo_angles)))
    cos_hi, sin_hi = g.const(f'{prefix}_cos_hi', f32(np.cos(hi_angles))), g.const(f'{prefix}_sin_hi', f32(np.sin(hi_angles)))
    lo_n = g.const(f'{prefix}_lo_n', np.array(ROPE_LO, dtype=np.int64))
    p_hi, p_lo = g.op('Div', [positions, lo_n]), g.op('Mod', [positions, lo_n])
    c_hi, s_hi = g.op('Gather', [cos_hi, p_hi]), g.op('Gather', [sin_hi, p_hi])   # [B, S, HALF]
    c_lo, s_lo = g.op('Gather', [cos_lo, p_lo]), g.op('Gather', [sin_lo, p_lo])
    cos = g.op('Sub', [g.op('Mul', [c_hi, c_lo]), g.op('Mul', [s_hi, s_lo])])
    sin = g.op('Add', [g.op('Mul', [s_hi, c_lo]), g.op('Mul', [c_hi, s_lo])])
    return cos, sin


def build_graph(manifest, w, kv_dtype):
    cfg = manifest['config']
    L, D, H, DH, V = cfg['layers'], cfg['dModel'], cfg['heads'], cfg['headDim'], cfg['vocab']
    FF = cfg['ffDim']
    KVH = cfg.get('kvHeads', H)  # grouped-query attention when below H (query head h reads KV head h // (H // KVH))
    swiglu = cfg.get('mlp', 'gelu') == 'swiglu'
    g = Graph()
    i64 = lambda *v: np.array(v, dtype=np.int64)
    ax_last = g.const('axes_last', i64(-1))
    ax_1 = g.const('axes_1', i64(1))
    ax_12 = g.const('axes_12', i64(1, 2))
    eps = g.const('rms_eps', np.array(1e-5, dtype=np.float32))
    one = g.const('one', np.array(1.0, dtype=np.float32))
    half = g.const('half', np.array(0.5, dtype=np.float32))
    gelu_c = g.const('gelu_c', np.array(0.7978845608028654, dtype=np.float32))
    gelu_a = g.const('gelu_a', np.array(0.044715, dtype=np.float32))
    scale = g.const('attn_scale', np.array(1.0 / np.sqrt(DH), dtype=np.float32))
    neg = g.const('neg', np.array(NEG, dtype=np.float32))
    heads_shape = g.const('heads_shape', i64(0, 0, H, DH))
    model_shape = g.const('model_shape', i64(0, 0, D))
    idx1 = g.const('idx1', np.array(1, dtype=np.int64))
    idx2 = g.const('idx2', np.array(2, dtype=np.int64))
    zero_i = g.const('zero_i', np.array(0, dtype=np.int64))
    one_i = g.const('one_i', np.array(1, dtype=np.int64))
    if KVH != H:
        kv_heads_shape = g.const('kv_heads_shape', i64(0, 0, KVH, DH))
        group_shape = g.const('group_shape', i64(0, KVH, H // KVH, -1, DH))  # [B, H, S, DH] -> [B, KVH, G, S, DH]
        heads_shape_bhsd = g.const('heads_shape_bhsd', i64(0, H, -1, DH))    # and back
        ax_2 = g.const('axes_2', i64(2))

    def rmsnorm(x, gain):
        ms = g.op('ReduceMean', [g.op('Mul', [x, x])], axes=[-1], keepdims=1)
        inv = g.op('Reciprocal', [g.op('Sqrt', [g.op('Add', [ms, eps])])])
        return g.op('Mul', [g.op('Mul', [x, inv]), gain])

    def linear(x, name, mat):
        # demo matrices are out x in (out[o] = sum_i W[o, i] x[i]); MatMul wants in x out.
        return g.op('MatMul', [x, g.const(name, mat.T)])

    def to_heads(x, shape=heads_shape):  # [B, S, H * DH] -> [B, H, S, DH]
        return g.op('Transpose', [g.op('Reshape', [x, shape])], perm=[0, 2, 1, 3])

    # ---- positions: RoPE tables and the attention mask, shared by all layers
    cos, sin = rope_angles(g, 'position_ids', w['invFreq'])
    cos = g.op('Unsqueeze', [g.op('Concat', [cos, cos], axis=-1), ax_1])  # [B, 1, S, DH]
    sin = g.op('Unsqueeze', [g.op('Concat', [sin, sin], axis=-1), ax_1])

    first_start, first_end = g.const('rope_a0', i64(0)), g.const('rope_a1', i64(DH // 2))
    second_start, second_end = g.const('rope_b0', i64(DH // 2)), g.const('rope_b1', i64(DH))

    def rope(x):  # rotates pairs (i, i + HALF) of each head, as rotate_half
        x1 = g.op('Slice', [x, first_start, first_end, ax_last])
        x2 = g.op('Slice', [x, second_start, second_end, ax_last])
        rot = g.op('Concat', [g.op('Neg', [x2]), x1], axis=-1)
        return g.op('Add', [g.op('Mul', [x, cos]), g.op('Mul', [rot, sin])])

    past_len = g.op('Gather', [g.op('Shape', ['past_key_values.0.key']), idx2])
    new_len = g.op('Gather', [g.op('Shape', ['input_ids']), idx1])
    total_len = g.op('Add', [past_len, new_len])
    q_pos = g.op('Unsqueeze', [g.op('Range', [past_len, total_len, one_i]), ax_1])  # [S, 1]
    k_pos = g.op('Range', [zero_i, total_len, one_i])                               # [T]
    causal = g.op('LessOrEqual', [k_pos, q_pos])                                    # [S, T]
    padding = g.op('Unsqueeze', [g.op('Cast', ['attention_mask'], to=TensorProto.BOOL), ax_12])  # [B, 1, 1, T]
    allowed = g.op('And', [causal, padding])                                        # [B, 1, S, T]

    # ---- the blocks
    x = g.op('Gather', [g.const('embed', w['embed']), 'input_ids'])  # [B, S, D]
    for l in range(L):
        wqkv = w[f'l{l}.wqkv']
        n = rmsnorm(x, g.const(f'l{l}.norm1', w[f'l{l}.norm1']))
        QD, KD = H * DH, KVH * DH
        kv_shape = heads_shape if KVH == H else kv_heads_shape
        q = rope(to_heads(linear(n, f'l{l}.wq', wqkv[0:QD])))
        k = rope(to_heads(linear(n, f'l{l}.wk', wqkv[QD:QD + KD]), kv_shape))
        v = to_heads(linear(n, f'l{l}.wv', wqkv[QD + KD:QD + 2 * KD]), kv_shape)
        past_k, past_v = f'past_key_values.{l}.key', f'past_key_values.{l}.value'
        if kv_dtype == TensorProto.FLOAT16:
            past_k = g.op('Cast', [past_k], to=TensorProto.FLOAT)
            past_v = g.op('Cast', [past_v], to=TensorProto.FLOAT)
        present_k, present_v = f'present.{l}.key', f'present.{l}.value'
        f32_names = (present_k, present_v) if kv_dtype == TensorProto.FLOAT else (None, None)
        k_all = g.op('Concat', [past_k, k], name=f32_names[0], axis=2)   # [B, H, T, DH]
        v_all = g.op('Concat', [past_v, v], name=f32_names[1], axis=2)
        if kv_dtype == TensorProto.FLOAT16:
            g.op('Cast', [k_all], name=present_k, to=TensorProto.FLOAT16)
            g.op('Cast', [v_all], name=present_v, to=TensorProto.FLOAT16)
        if KVH == H:
            scores = g.op('Mul', [g.op('MatMul', [q, g.op('Transpose', [k_all], perm=[0, 1, 3, 2])]), scale])
            probs = g.op('Softmax', [g.op('Where', [allowed, scores, neg])], axis=-1)
            att = g.op('Reshape', [g.op('Transpose', [g.op('MatMul', [probs, v_all])], perm=[0, 2, 1, 3]), model_shape])
        else:  # the G query heads of a group against their KV head, by broadcasting (no repeated KV)
            qg = g.op('Reshape', [q, group_shape])                                        # [B, KVH, G, S, DH]
            kt = g.op('Unsqueeze', [g.op('Transpose', [k_all], perm=[0, 1, 3, 2]), ax_2])  # [B, KVH, 1, DH, T]
            scores = g.op('Mul', [g.op('MatMul', [qg, kt]), scale])                     # [B, KVH, G, S, T]
            probs = g.op('Softmax', [g.op('Where', [g.op('Unsqueeze', [allowed, ax_1]), scores, neg])], axis=-1)
            ctx = g.op('MatMul', [probs, g.op('Unsqueeze', [v_all, ax_2])])             # [B, KVH, G, S, DH]
            ctx = g.op('Reshape', [ctx, heads_shape_bhsd])                               # [B, H, S, DH]
            att = g.op('Reshape', [g.op('Transpose', [ctx], perm=[0, 2, 1, 3]), model_shape])
        x = g.op('Add', [x, linear(att, f'l{l}.wo', w[f'l{l}.wo'])])
        n = rmsnorm(x, g.const(f'l{l}.norm2', w[f'l{l}.norm2']))
        if swiglu:  # down(silu(gate(n)) * up(n)), w1 holding gate and up stacked
            w1 = w[f'l{l}.w1']
            gate = linear(n, f'l{l}.wg', w1[0:FF])
            up = linear(n, f'l{l}.wu', w1[FF:2 * FF])
            h = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up])
        else:
            h = linear(n, f'l{l}.w1', w[f'l{l}.w1'])
            inner = g.op('Mul', [gelu_c, g.op('Add', [h, g.op('Mul', [gelu_a, g.op('Mul', [h, g.op('Mul', [h, h])])])])])
            h = g.op('Mul', [g.op('Mul', [half, h]), g.op('Add', [one, g.op('Tanh', [inner])])])
        x = g.op('Add', [x, linear(h, f'l{l}.w2', w[f'l{l}.w2'])])
    n = rmsnorm(x, g.const('normF', w['normF']))
    g.op('MatMul', [n, g.const('unembed', w['unembed'].T)], name='logits')

    kv_past = ['batch_size', KVH, 'past_sequence_length', DH]
    kv_present = ['batch_size', KVH, 'total_sequence_length', DH]
    inputs = [
        helper.make_tensor_value_info('input_ids', TensorProto.INT64, ['batch_size', 'sequence_length']),
        helper.make_tensor_value_info('attention_mask', TensorProto.INT64, ['batch_size', 'total_sequence_length']),
        helper.make_tensor_value_info('position_ids', TensorProto.INT64, ['batch_size', 'sequence_length']),
    ]
    outputs = [helper.make_tensor_value_info('logits', TensorProto.FLOAT, ['batch_size', 'sequence_length', V])]
    for l in range(L):
        for side in ('key', 'value'):
            inputs.append(helper.make_tensor_value_info(f'past_key_values.{l}.{side}', kv_dtype, kv_past))
            outputs.append(helper.make_tensor_value_info(f'present.{l}.{side}', kv_dtype, kv_present))
    graph = helper.make_graph(g.nodes, cfg.get('graphName', 'rlxkv_demo'), inputs, outputs, g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', OPSET)],
                              producer_name='rlxkv scripts/make_onnx_model.py')
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def bytes_to_unicode():
    """GPT-2's byte -> printable character table (what ByteLevel pre-tokenizes to)."""
    bs = list(range(ord('!'), ord('~') + 1)) + list(range(ord('¡'), ord('¬') + 1)) + list(range(ord('®'), ord('ÿ') + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def tokenizer_files(bos_id):
    """A byte-level BPE without merges: byte b is token b, '<s>' (BOS) is bos_id,
    prepended to every encoding like the demo's encode()."""
    table = bytes_to_unicode()
    vocab = {table[b]: b for b in range(256)}
    vocab['<s>'] = bos_id
    byte_level = {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': False, 'use_regex': False}
    bos = {'SpecialToken': {'id': '<s>', 'type_id': 0}}
    tokenizer = {
        'version': '1.0',
        'truncation': None,
        'padding': None,
        'added_tokens': [{'id': bos_id, 'content': '<s>', 'single_word': False, 'lstrip': False,
                          'rstrip': False, 'normalized': False, 'special': True}],
        'normalizer': None,
        'pre_tokenizer': byte_level,
        'post_processor': {
            'type': 'TemplateProcessing',
            'single': [bos, {'Sequence': {'id': 'A', 'type_id': 0}}],
            'pair': [bos, {'Sequence': {'id': 'A', 'type_id': 0}}, bos, {'Sequence': {'id': 'B', 'type_id': 1}}],
            'special_tokens': {'<s>': {'id': '<s>', 'ids': [bos_id], 'tokens': ['<s>']}},
        },
        'decoder': byte_level,
        'model': {'type': 'BPE', 'dropout': None, 'unk_token': None, 'continuing_subword_prefix': None,
                  'end_of_word_suffix': None, 'fuse_unk': False, 'byte_fallback': False,
                  'ignore_merges': False, 'vocab': vocab, 'merges': []},
    }
    tokenizer_config = {
        'tokenizer_class': 'PreTrainedTokenizerFast',
        'bos_token': '<s>',
        'add_bos_token': True,
        'add_eos_token': False,
        'clean_up_tokenization_spaces': False,
        'model_max_length': MAX_POSITIONS,
    }
    return tokenizer, tokenizer_config


def write_folder(folder, manifest, model, f16kv):
    cfg = manifest['config']
    os.makedirs(os.path.join(folder, 'onnx'), exist_ok=True)
    js_config = {'dtype': 'fp32'}
    if f16kv:
        js_config['kv_cache_dtype'] = 'float16'  # read by transformers.js 3.x; 4.x reads the graph's input types
    config = {
        'architectures': ['LlamaForCausalLM'],
        'model_type': 'llama',
        'num_hidden_layers': cfg['layers'],
        'num_attention_heads': cfg['heads'],
        'num_key_value_heads': cfg.get('kvHeads', cfg['heads']),
        'hidden_size': cfg['dModel'],
        'head_dim': cfg['headDim'],
        'intermediate_size': cfg['ffDim'],
        'vocab_size': cfg['vocab'],
        'hidden_act': 'silu' if cfg.get('mlp') == 'swiglu' else 'gelu_pytorch_tanh',
        'rms_norm_eps': 1e-5,
        'rope_theta': cfg['ropeBase'],
        'max_position_embeddings': MAX_POSITIONS,
        'tie_word_embeddings': False,
        'bos_token_id': cfg['bos'],
        'eos_token_id': None,
        'pad_token_id': None,
        'use_cache': True,
        'torch_dtype': 'float32',
        'transformers.js_config': js_config,
        'rlxkv': {'model': cfg['version'], 'seed': cfg['seed'], 'fingerprint_key': manifest['fingerprintKey'],
                  'kv_dtype': 'float16' if f16kv else 'float32'},
    }
    generation_config = {'bos_token_id': cfg['bos'], 'eos_token_id': None, 'pad_token_id': None}
    tokenizer, tokenizer_config = tokenizer_files(cfg['bos'])
    for name, obj in [('config.json', config), ('generation_config.json', generation_config),
                      ('tokenizer.json', tokenizer), ('tokenizer_config.json', tokenizer_config)]:
        with open(os.path.join(folder, name), 'w', encoding='utf-8') as f:
            json.dump(obj, f, indent=2, ensure_ascii=False)
            f.write('\n')
    onnx.save(model, os.path.join(folder, 'onnx', 'model.onnx'))


# Random-weight models of a real model's shape (--shape NAME): config as demo/model.js's, plus kvHeads and mlp.
SHAPES = {
    'smollm2-135m': {'folder': 'rlxkv-smollm2-135m-shape', 'layers': 30, 'dModel': 576, 'heads': 9, 'kvHeads': 3,
                     'headDim': 64, 'ffDim': 1536, 'mlp': 'swiglu', 'ropeBase': 100000, 'seed': 135},
}


def random_model(name):
    """(manifest, weights) of SHAPES[name] with random weights, named as load_weights names the demo's."""
    s = SHAPES[name]
    L, D, H, KVH, DH, FF = s['layers'], s['dModel'], s['heads'], s['kvHeads'], s['headDim'], s['ffDim']
    V, bos = 257, 256  # the byte-level tokenizer's 256 bytes and '<s>'
    cfg = {k: v for k, v in s.items() if k != 'folder'}
    cfg.update(vocab=V, bos=bos, version=f'rlxkv-random-{name}', graphName=f'rlxkv_{name.replace("-", "_")}')
    rng = np.random.default_rng(s['seed'])
    # N(0, 1 / fan_in) (N(0, 1) embeddings): activations of order 1 at every depth, so the next
    # token depends on the prompt (with 0.02 everywhere every prompt gave the same token).
    rand = lambda *shape: rng.standard_normal(shape, dtype=np.float32) * np.float32(1 / np.sqrt(shape[-1]))
    w = {'embed': rand(V, D) * np.float32(np.sqrt(D)), 'normF': np.ones(D, np.float32), 'unembed': rand(V, D),
         'invFreq': 1.0 / (s['ropeBase'] ** (np.arange(0, DH, 2, dtype=np.float64) / DH))}
    for l in range(L):
        w[f'l{l}.norm1'] = np.ones(D, np.float32)
        w[f'l{l}.wqkv'] = rand((H + 2 * KVH) * DH, D)
        w[f'l{l}.wo'] = rand(D, H * DH)
        w[f'l{l}.norm2'] = np.ones(D, np.float32)
        w[f'l{l}.w1'] = rand(2 * FF, D)  # gate, then up
        w[f'l{l}.w2'] = rand(D, FF)
    key = (f'{cfg["version"]};vocab={V};bos={bos};seed={s["seed"]};layers={L};d={D};heads={H};kvheads={KVH};'
           f'headdim={DH};ff={FF};rope={s["ropeBase"]};norm=rms;act=swiglu;kv=f32')
    return {'config': cfg, 'fingerprintKey': key}, w


# ---- hybrid decoders (--kind NAME): LFM2-, Qwen3.5-, Gemma3-, Granite-4.0-H-like
#
# Tiny decoders with random weights (numpy, fixed seed) and the I/O names,
# shapes and config.json that transformers.js 4.3.2 reads for those model
# types (getCacheNames, addPastKeyValues, the model classes). The mixers are
# simplified but every cached state is used:
#
#   conv (LFM2)         gated depthwise causal conv over the last L inputs:
#                       past_conv.i [B, hidden, L] is the L inputs before the
#                       chunk; present_conv.i the last L after it.
#   linear_attention    a causal depthwise conv (kernel K) over the q/k/v
#   (Qwen3.5)           projection, past_conv.i [B, conv_dim, K], then gated
#                       linear attention S_t = g_t S_(t-1) + k_t^T v_t,
#                       o_t = q_t S_t, run chunk-parallel from the state
#                       past_recurrent.i [B, heads, key_dim, value_dim].
#   full_attention      GQA with RoPE; past_key_values.i.key/value
#                       [B, kv_heads, past, head_dim] -> present.i.key/value.
#   sliding_attention   the same, but a query sees only keys less than W
#                       positions back (q - k < W, as HF's sliding_window);
#                       present.i.* still holds the WHOLE sequence, as the
#                       Optimum and onnxruntime-genai exports of Gemma 3 do.
#   mamba               Granite 4.0-H's Mamba-2 mixer: in_proj to the gate z,
#   (granitemoehybrid)  xBC (conv_dim = mamba_n_heads * mamba_d_head +
#                       2 * mamba_n_groups * mamba_d_state) and dt; a causal
#                       depthwise conv (kernel mamba_d_conv) over xBC,
#                       past_conv.i [B, conv_dim, mamba_d_conv] (the last
#                       d_conv inputs, as HF's cache and the onnx-community
#                       exports keep them; the oldest is never read again);
#                       then the SSM per head h (B and C shared by the heads
#                       of a group): S_t = exp(dt_t A_h) S_(t-1) + dt_t x_t B_t^T,
#                       y_t = S_t C_t + D_h x_t, run chunk-parallel from
#                       past_ssm.i [B, mamba_n_heads, mamba_d_head, mamba_d_state];
#                       out_proj(rmsnorm(y * silu(z))).
#   attention           (granitemoehybrid) full attention without RoPE, as
#                       Granite 4.0-H's NoPE layers: no position_ids input.
#
# The attention mask's length is the total length T (past + new): every
# attention layer's past must hold T - S positions, sliding ones included.
# Batch rows of padding are masked in attention only (as the real exports'
# conv and linear layers, which ignore the mask). RoPE turns by position_ids
# (Gemma 3's sliding layers at rope_local_base_freq; Qwen3.5's decoder takes
# three rows, t/h/w, interleaved over the frequencies, equal for text).
# transformers.js numbers positions from 0, from 1 for gemma3_text.

HYBRID_KINDS = {
    'lfm2': {
        'folder': 'rlxkv-lfm2', 'seed': 2025,
        'layer_types': ['conv', 'full_attention', 'conv', 'sliding_attention'],
        'hidden': 64, 'heads': 4, 'kv_heads': 2, 'head_dim': 16, 'ff': 128,
        'conv_L_cache': 3, 'sliding_window': 8, 'rope_theta': 1000000.0,
    },
    'qwen3_5': {
        'folder': 'rlxkv-qwen3_5', 'seed': 35,
        'layer_types': ['linear_attention', 'linear_attention', 'linear_attention', 'full_attention'],
        'hidden': 64, 'heads': 4, 'kv_heads': 2, 'head_dim': 16, 'ff': 128,
        'linear_conv_kernel_dim': 4, 'linear_num_key_heads': 2, 'linear_num_value_heads': 2,
        # Found by trying, so that every state moves the greedy tokens: with the linear layers'
        # output gain at 1, zeroing some layers' conv or recurrent state changed no token; with a
        # decay bias of 3 (g about 0.95) neither did some recurrent states one token stale (bias 2:
        # g about 0.88); with the attention layer's gain at 1 its zeroed values sometimes did not.
        'linear_out_gain': 3.0, 'linear_decay_bias': 2.0, 'attention_out_gain': 2.0,
        'linear_key_head_dim': 16, 'linear_value_head_dim': 16, 'rope_theta': 10000.0,
    },
    'gemma3': {
        'folder': 'rlxkv-gemma3', 'seed': 3,
        'layer_types': ['sliding_attention', 'sliding_attention', 'full_attention', 'sliding_attention'],
        'hidden': 64, 'heads': 4, 'kv_heads': 2, 'head_dim': 16, 'ff': 128,
        'sliding_window': 8, 'sliding_window_pattern': 3, 'rope_theta': 1000000.0, 'rope_local_base_freq': 10000.0,
    },
    # Written last: scripts/build.sh judges the hybrid models by rlxkv-granite4h-f16kv/.
    'granite4h': {
        'folder': 'rlxkv-granite4h', 'seed': 40,
        'layer_types': ['mamba', 'attention', 'mamba', 'mamba'],
        'hidden': 64, 'heads': 4, 'kv_heads': 2, 'head_dim': 16, 'ff': 128, 'rope_theta': 10000.0,
        # mamba_expand * hidden = mamba_n_heads * mamba_d_head (HF checks it); conv_dim 128 + 2 * 2 * 16 = 192.
        # Each size differs from the others, so a layout with two of them swapped cannot pass.
        'mamba_n_heads': 4, 'mamba_d_head': 32, 'mamba_n_groups': 2, 'mamba_d_state': 16, 'mamba_d_conv': 4,
        'mamba_expand': 2,
        # A = -exp(A_log) per head, dt = softplus(in_dt . x + dt_bias) (0.13 where in_dt . x is 0):
        # decays exp(dt A) of about 0.94 to 0.78 a token.
        # Found by trying, so that every state moves the greedy tokens: with the skip D x at 1 (Mamba's
        # init), zeroing or staling some layers' SSM state changed no token (the skip outweighs
        # a state of size dt / (1 - decay)); with D at 0.1 every state does, on seeds 40, 41 and 42.
        'mamba_A': [0.5, 1.0, 1.5, 2.0], 'mamba_dt_bias': -2.0, 'mamba_D': 0.1,
        'mamba_out_gain': 3.0, 'attention_out_gain': 2.0,
    },
}
# For bench/bench_state.mjs only (not built by scripts/build.sh): LFM2-350M's
# layers, widths and heads (16 layers, 6 of them attention; hidden 1024, 16
# query and 8 KV heads of 64; a conv state of 3), with an MLP of 2,048 (not
# 6,656) and the byte vocabulary, so a prefill costs what a real model's
# layers do without a 1.5 GB file.
HYBRID_KINDS['lfm2-bench'] = {
    'base': 'lfm2', 'folder': 'rlxkv-lfm2-bench', 'seed': 350,
    'layer_types': ['conv', 'conv', 'full_attention', 'conv', 'conv', 'full_attention', 'conv', 'conv',
                    'full_attention', 'conv', 'full_attention', 'conv', 'full_attention', 'conv', 'full_attention', 'conv'],
    'hidden': 1024, 'heads': 16, 'kv_heads': 8, 'head_dim': 64, 'ff': 2048,
    'conv_L_cache': 3, 'sliding_window': None, 'rope_theta': 1000000.0,
}
# And Qwen3.5-0.8B's widths (hidden 1024; linear attention of 16 key and 16
# value heads of 128, a conv of 4; full attention of 8 query and 2 KV heads
# of 256, every 4th layer) over 12 layers, with an MLP of 2,048.
HYBRID_KINDS['qwen3_5-bench'] = {
    'base': 'qwen3_5', 'folder': 'rlxkv-qwen3_5-bench', 'seed': 3508,
    'layer_types': ['linear_attention', 'linear_attention', 'linear_attention', 'full_attention'] * 3,
    'hidden': 1024, 'heads': 8, 'kv_heads': 2, 'head_dim': 256, 'ff': 2048,
    'linear_conv_kernel_dim': 4, 'linear_num_key_heads': 16, 'linear_num_value_heads': 16,
    'linear_out_gain': 1.0, 'linear_decay_bias': 2.0, 'attention_out_gain': 1.0,
    'linear_key_head_dim': 128, 'linear_value_head_dim': 128, 'rope_theta': 10000000.0,
}
HYBRID_VOCAB, HYBRID_BOS = 257, 256  # the byte-level tokenizer's 256 bytes and '<s>'


def hybrid_weights(spec):
    """Random weights by name, matrices as [in, out] (MatMul's order), N(0, 1 / fan_in):
    activations of order 1 at every depth, so each state moves the next token."""
    rng = np.random.default_rng(spec['seed'])
    rand = lambda n_in, n_out: rng.standard_normal((n_in, n_out), dtype=np.float32) * np.float32(1 / np.sqrt(n_in))
    D, H, KVH, DH, FF, V = spec['hidden'], spec['heads'], spec['kv_heads'], spec['head_dim'], spec['ff'], HYBRID_VOCAB
    w = {'embed': rng.standard_normal((V, D), dtype=np.float32), 'unembed': rand(D, V)}
    for l, kind in enumerate(spec['layer_types']):
        if kind in ('full_attention', 'sliding_attention', 'attention'):
            w.update({f'l{l}.wq': rand(D, H * DH), f'l{l}.wk': rand(D, KVH * DH), f'l{l}.wv': rand(D, KVH * DH),
                      f'l{l}.wo': rand(H * DH, D) * np.float32(spec.get('attention_out_gain', 1.0))})
        elif kind == 'conv':
            L = spec['conv_L_cache']
            w.update({f'l{l}.in_proj': rand(D, 3 * D), f'l{l}.out_proj': rand(D, D),
                      f'l{l}.conv': rng.standard_normal((D, 1, L), dtype=np.float32)})
        elif kind == 'linear_attention':
            HL, DK, DV, K = (spec['linear_num_value_heads'], spec['linear_key_head_dim'],
                             spec['linear_value_head_dim'], spec['linear_conv_kernel_dim'])
            C = 2 * HL * DK + HL * DV
            w.update({f'l{l}.in_qkv': rand(D, C), f'l{l}.in_z': rand(D, HL * DV), f'l{l}.in_a': rand(D, HL),
                      f'l{l}.conv': rng.standard_normal((C, 1, K), dtype=np.float32) * np.float32(1 / np.sqrt(K)),
                      f'l{l}.out_proj': rand(HL * DV, D) * np.float32(spec['linear_out_gain'])})
        elif kind == 'mamba':
            NH, P, G, N, K = (spec['mamba_n_heads'], spec['mamba_d_head'], spec['mamba_n_groups'],
                              spec['mamba_d_state'], spec['mamba_d_conv'])
            C = NH * P + 2 * G * N
            w.update({f'l{l}.in_z': rand(D, NH * P), f'l{l}.in_xbc': rand(D, C), f'l{l}.in_dt': rand(D, NH),
                      f'l{l}.conv': rng.standard_normal((C, 1, K), dtype=np.float32) * np.float32(1 / np.sqrt(K)),
                      f'l{l}.out_proj': rand(NH * P, D) * np.float32(spec['mamba_out_gain'])})
        w[f'l{l}.w_gate'], w[f'l{l}.w_up'], w[f'l{l}.w_down'] = rand(D, FF), rand(D, FF), rand(FF, D)
    return w


def build_hybrid(spec, w, cache_dtype, embeds_input):
    """The decoder graph of one HYBRID_KINDS spec, caches in cache_dtype (computed in float32).
    embeds_input: the graph takes inputs_embeds [B, S, hidden] (Qwen3.5's decoder_model_merged)
    instead of input_ids, and position_ids [3, B, S] (text-only mRoPE: three equal rows)."""
    D, H, KVH, DH, FF, V = spec['hidden'], spec['heads'], spec['kv_heads'], spec['head_dim'], spec['ff'], HYBRID_VOCAB
    types = spec['layer_types']
    g = Graph()
    i64 = lambda *v: np.array(v, dtype=np.int64)
    f32c = lambda name, v: g.const(name, np.array(v, dtype=np.float32))
    ax = {a: g.const(f'axes_{a}', i64(a)) for a in (0, 1, 2, 3, -1)}
    ax_12 = g.const('axes_12', i64(1, 2))
    eps, neg = f32c('rms_eps', 1e-6), f32c('neg', NEG)
    zero_i, one_i = g.const('zero_i', np.array(0, dtype=np.int64)), g.const('one_i', np.array(1, dtype=np.int64))
    inputs, outputs = [], []
    f16 = cache_dtype == TensorProto.FLOAT16

    def past_input(name, dims):  # a cache input, as float32
        inputs.append(helper.make_tensor_value_info(name, cache_dtype, dims))
        return g.op('Cast', [name], to=TensorProto.FLOAT) if f16 else name

    def present_output(value, name, dims):
        outputs.append(helper.make_tensor_value_info(name, cache_dtype, dims))
        g.op('Cast', [value], name=name, to=TensorProto.FLOAT16) if f16 else g.op('Identity', [value], name=name)

    def rmsnorm(x):  # gains of one: nothing to learn in a random model
        ms = g.op('ReduceMean', [g.op('Mul', [x, x])], axes=[-1], keepdims=1)
        return g.op('Mul', [x, g.op('Reciprocal', [g.op('Sqrt', [g.op('Add', [ms, eps])])])])

    def linear(x, name):
        return g.op('MatMul', [x, g.const(name, w[name])])

    def silu(x):
        return g.op('Mul', [x, g.op('Sigmoid', [x])])

    consts = {}

    def shared(*v):  # one int64 initializer per distinct value
        key = tuple(v)
        if key not in consts:
            consts[key] = g.const(f'i64_{len(consts)}', i64(*v))
        return consts[key]

    def slice_last(x, start, end, axis=-1):
        return g.op('Slice', [x, shared(start), shared(end), ax[axis]])

    def heads(x, n, d):  # [B, S, n * d] -> [B, n, S, d]
        return g.op('Transpose', [g.op('Reshape', [x, shared(0, 0, n, d)])], perm=[0, 2, 1, 3])

    def merge_heads(x, n, d):  # [B, n, S, d] -> [B, S, n * d]
        return g.op('Reshape', [g.op('Transpose', [x], perm=[0, 2, 1, 3]), shared(0, 0, n * d)])

    # ---- inputs, positions and masks
    if embeds_input:
        inputs.append(helper.make_tensor_value_info('inputs_embeds', TensorProto.FLOAT, ['batch_size', 'sequence_length', D]))
        x = 'inputs_embeds'
    else:
        inputs.append(helper.make_tensor_value_info('input_ids', TensorProto.INT64, ['batch_size', 'sequence_length']))
        x = g.op('Gather', [g.const('embed', w['embed']), 'input_ids'])  # [B, S, D]
    inputs.append(helper.make_tensor_value_info('attention_mask', TensorProto.INT64, ['batch_size', 'total_sequence_length']))
    nope = all(t in ('mamba', 'attention') for t in types)  # Granite 4.0-H: no RoPE, no position_ids
    if not nope:
        pos_dims = [3, 'batch_size', 'sequence_length'] if embeds_input else ['batch_size', 'sequence_length']
        inputs.append(helper.make_tensor_value_info('position_ids', TensorProto.INT64, pos_dims))

    def rope_tables(theta, prefix):  # cos, sin [B, 1, S, DH] for rotate_half pairs (i, i + DH/2)
        inv_freq = 1.0 / (theta ** (np.arange(0, DH, 2, dtype=np.float64) / DH))
        if not embeds_input:
            cos, sin = rope_angles(g, 'position_ids', inv_freq, prefix)
        else:  # interleaved mRoPE: frequency j takes its angle from position row j % 3 (t, h, w)
            row = lambda r: g.op('Squeeze', [g.op('Slice', ['position_ids', shared(r), shared(r + 1), ax[0]]), ax[0]])
            rows = [rope_angles(g, row(r), inv_freq, f'{prefix}{r}') for r in range(3)]
            pick = [g.const(f'{prefix}_pick{r}', (np.arange(DH // 2) % 3 == r).astype(np.float32)) for r in range(3)]
            cos = g.op('Sum', [g.op('Mul', [rows[r][0], pick[r]]) for r in range(3)])
            sin = g.op('Sum', [g.op('Mul', [rows[r][1], pick[r]]) for r in range(3)])
        cos = g.op('Unsqueeze', [g.op('Concat', [cos, cos], axis=-1), ax[1]])
        sin = g.op('Unsqueeze', [g.op('Concat', [sin, sin], axis=-1), ax[1]])
        return cos, sin

    total = g.op('Gather', [g.op('Shape', ['attention_mask']), g.const('idx1', np.array(1, dtype=np.int64))])
    new = g.op('Gather', [g.op('Shape', [x]), g.const('idx1b', np.array(1, dtype=np.int64))])
    past = g.op('Sub', [total, new])
    q_idx = g.op('Unsqueeze', [g.op('Range', [past, total, one_i]), ax[1]])  # [S, 1]
    k_idx = g.op('Range', [zero_i, total, one_i])                            # [T]
    padding = g.op('Unsqueeze', [g.op('Cast', ['attention_mask'], to=TensorProto.BOOL), ax_12])  # [B, 1, 1, T]
    allowed = {'full_attention': g.op('And', [g.op('LessOrEqual', [k_idx, q_idx]), padding])}   # [B, 1, S, T]
    if 'sliding_attention' in types:
        window = g.const('sliding_window', np.array(spec['sliding_window'], dtype=np.int64))
        in_window = g.op('Less', [g.op('Sub', [q_idx, k_idx]), window])                          # q - k < W
        allowed['sliding_attention'] = g.op('And', [allowed['full_attention'], in_window])
    ropes = {}
    if 'full_attention' in types:
        ropes['full_attention'] = rope_tables(spec['rope_theta'], 'rope')
    if 'sliding_attention' in types:  # Gemma 3's local layers turn at their own base
        local = spec.get('rope_local_base_freq')
        ropes['sliding_attention'] = rope_tables(local, 'rope_local') if local else ropes['full_attention']
    # chunk-local causal mask for the linear attention's (and Mamba's) intra-chunk part: [S, S], k <= q
    if 'linear_attention' in types or 'mamba' in types:
        s_idx = g.op('Range', [zero_i, new, one_i])
        causal_ss = g.op('LessOrEqual', [s_idx, g.op('Unsqueeze', [s_idx, ax[1]])])

    # ---- mixers
    def attention(l, n, kind):
        half = DH // 2
        def rope(t):
            if kind not in ropes:  # NoPE
                return t
            cos, sin = ropes[kind]
            t1, t2 = slice_last(t, 0, half), slice_last(t, half, DH)
            rot = g.op('Concat', [g.op('Neg', [t2]), t1], axis=-1)
            return g.op('Add', [g.op('Mul', [t, cos]), g.op('Mul', [rot, sin])])
        q = rope(heads(linear(n, f'l{l}.wq'), H, DH))
        k = rope(heads(linear(n, f'l{l}.wk'), KVH, DH))
        v = heads(linear(n, f'l{l}.wv'), KVH, DH)
        kv_past = ['batch_size', KVH, 'past_sequence_length', DH]
        kv_present = ['batch_size', KVH, 'total_sequence_length', DH]
        k_all = g.op('Concat', [past_input(f'past_key_values.{l}.key', kv_past), k], axis=2)   # [B, KVH, T, DH]
        v_all = g.op('Concat', [past_input(f'past_key_values.{l}.value', kv_past), v], axis=2)
        present_output(k_all, f'present.{l}.key', kv_present)
        present_output(v_all, f'present.{l}.value', kv_present)
        qg = g.op('Reshape', [q, shared(0, KVH, H // KVH, -1, DH)])            # [B, KVH, G, S, DH]
        kt = g.op('Unsqueeze', [g.op('Transpose', [k_all], perm=[0, 1, 3, 2]), ax[2]])              # [B, KVH, 1, DH, T]
        scores = g.op('Mul', [g.op('MatMul', [qg, kt]), f32c(f'scale_{l}', 1 / np.sqrt(DH))])      # [B, KVH, G, S, T]
        probs = g.op('Softmax', [g.op('Where', [g.op('Unsqueeze', [allowed.get(kind, allowed['full_attention']), ax[1]]), scores, neg])], axis=-1)
        ctx = g.op('MatMul', [probs, g.op('Unsqueeze', [v_all, ax[2]])])                           # [B, KVH, G, S, DH]
        ctx = g.op('Reshape', [ctx, shared(0, H, -1, DH)])
        return linear(merge_heads(ctx, H, DH), f'l{l}.wo')

    def causal_conv(l, name, x_bsc, C, K):
        """Depthwise causal conv (kernel K) of x [B, S, C] after the K inputs in past_conv.l [B, C, K]."""
        cat = g.op('Concat', [past_input(f'past_conv.{l}', ['batch_size', C, K]),
                              g.op('Transpose', [x_bsc], perm=[0, 2, 1])], axis=2)          # [B, C, K + S]
        present_output(slice_last(cat, -K, 2 ** 62), f'present_conv.{l}', ['batch_size', C, K])
        out = g.op('Conv', [cat, g.const(name, w[name])], group=C, kernel_shape=[K])       # [B, C, S + 1]
        return g.op('Transpose', [slice_last(out, 1, 2 ** 62)], perm=[0, 2, 1])            # [B, S, C]

    def short_conv(l, n):  # LFM2: out_proj(C * conv(B * x))
        bcx = linear(n, f'l{l}.in_proj')
        b, c, xx = slice_last(bcx, 0, D), slice_last(bcx, D, 2 * D), slice_last(bcx, 2 * D, 3 * D)
        conv = causal_conv(l, f'l{l}.conv', g.op('Mul', [b, xx]), D, spec['conv_L_cache'])
        return linear(g.op('Mul', [c, conv]), f'l{l}.out_proj')

    def linear_attention(l, n):
        HL, DK, DV, K = (spec['linear_num_value_heads'], spec['linear_key_head_dim'],
                         spec['linear_value_head_dim'], spec['linear_conv_kernel_dim'])
        C = 2 * HL * DK + HL * DV
        qkv = silu(causal_conv(l, f'l{l}.conv', linear(n, f'l{l}.in_qkv'), C, K))
        def l2norm(t):
            ss = g.op('ReduceSum', [g.op('Mul', [t, t]), ax[-1]], keepdims=1)
            return g.op('Div', [t, g.op('Sqrt', [g.op('Add', [ss, eps])])])
        q = l2norm(heads(slice_last(qkv, 0, HL * DK), HL, DK))             # unscaled: |q . k| <= 1
        k = l2norm(heads(slice_last(qkv, HL * DK, 2 * HL * DK), HL, DK))   # [B, HL, S, DK]
        v = heads(slice_last(qkv, 2 * HL * DK, C), HL, DV)                  # [B, HL, S, DV]
        # decay g_t = sigmoid(a . x_t + bias) per head: G = cumsum(log g) along S
        gate = g.op('Add', [linear(n, f'l{l}.in_a'), f32c(f'decay_bias_{l}', spec['linear_decay_bias'])])
        log_g = g.op('Log', [g.op('Sigmoid', [gate])])
        G = g.op('CumSum', [g.op('Transpose', [log_g], perm=[0, 2, 1]), g.const(f'cum_axis_{l}', np.array(2, dtype=np.int64))])  # [B, HL, S]
        state_dims = ['batch_size', HL, DK, DV]
        s0 = past_input(f'past_recurrent.{l}', state_dims)
        # o_t = exp(G_t) q_t S0 + sum_{j<=t} exp(G_t - G_j) (q_t . k_j) v_j
        diff = g.op('Sub', [g.op('Unsqueeze', [G, ax[3]]), g.op('Unsqueeze', [G, ax[2]])])          # [B, HL, S, S]
        decay = g.op('Exp', [g.op('Where', [causal_ss, diff, neg])])
        scores = g.op('Mul', [g.op('MatMul', [q, g.op('Transpose', [k], perm=[0, 1, 3, 2])]), decay])
        o = g.op('Add', [g.op('MatMul', [scores, v]),
                         g.op('MatMul', [g.op('Mul', [q, g.op('Exp', [g.op('Unsqueeze', [G, ax[3]])])]), s0])])
        # S_new = exp(G_S) S0 + sum_j exp(G_S - G_j) k_j^T v_j
        g_last = slice_last(G, -1, 2 ** 62)                                                          # [B, HL, 1]
        k_dec = g.op('Mul', [k, g.op('Exp', [g.op('Unsqueeze', [g.op('Sub', [g_last, G]), ax[3]])])])
        s_new = g.op('Add', [g.op('Mul', [s0, g.op('Exp', [g.op('Unsqueeze', [g_last, ax[3]])])]),
                             g.op('MatMul', [g.op('Transpose', [k_dec], perm=[0, 1, 3, 2]), v])])
        present_output(s_new, f'present_recurrent.{l}', state_dims)
        z = silu(linear(n, f'l{l}.in_z'))
        return linear(g.op('Mul', [merge_heads(o, HL, DV), z]), f'l{l}.out_proj')

    def mamba(l, n):
        NH, P, G, N, K = (spec['mamba_n_heads'], spec['mamba_d_head'], spec['mamba_n_groups'],
                          spec['mamba_d_state'], spec['mamba_d_conv'])
        I, C = NH * P, NH * P + 2 * G * N
        xbc = silu(causal_conv(l, f'l{l}.conv', linear(n, f'l{l}.in_xbc'), C, K))             # [B, S, C]
        xh = heads(slice_last(xbc, 0, I), NH, P)                                              # [B, NH, S, P]
        group_of = g.const(f'group_of_{l}', np.arange(NH, dtype=np.int64) // (NH // G))      # head h reads group h // (NH / G)
        bm = g.op('Gather', [heads(slice_last(xbc, I, I + G * N), G, N), group_of], axis=1)  # [B, NH, S, N]
        cm = g.op('Gather', [heads(slice_last(xbc, I + G * N, C), G, N), group_of], axis=1)
        # dt = softplus(. + dt_bias) per head; log decay a = dt * A (A < 0); G = cumsum(a) along S
        dt = g.op('Transpose', [g.op('Softplus', [g.op('Add', [linear(n, f'l{l}.in_dt'),
                                                                  f32c(f'dt_bias_{l}', spec['mamba_dt_bias'])])])], perm=[0, 2, 1])  # [B, NH, S]
        a_neg = g.const(f'A_{l}', -np.array(spec['mamba_A'], dtype=np.float32).reshape(1, NH, 1))
        Gs = g.op('CumSum', [g.op('Mul', [dt, a_neg]), g.const(f'cum_axis_{l}', np.array(2, dtype=np.int64))])  # [B, NH, S]
        xdt = g.op('Mul', [xh, g.op('Unsqueeze', [dt, ax[3]])])                               # dt_t x_t
        s0 = past_input(f'past_ssm.{l}', ['batch_size', NH, P, N])                            # [B, NH, P, N]
        # y_t = exp(G_t) S0 C_t + sum_{j<=t} exp(G_t - G_j) (C_t . B_j) dt_j x_j + D x_t
        diff = g.op('Sub', [g.op('Unsqueeze', [Gs, ax[3]]), g.op('Unsqueeze', [Gs, ax[2]])])  # [B, NH, S, S]
        decay = g.op('Exp', [g.op('Where', [causal_ss, diff, neg])])
        scores = g.op('Mul', [g.op('MatMul', [cm, g.op('Transpose', [bm], perm=[0, 1, 3, 2])]), decay])
        from_state = g.op('MatMul', [g.op('Mul', [cm, g.op('Exp', [g.op('Unsqueeze', [Gs, ax[3]])])]),
                                     g.op('Transpose', [s0], perm=[0, 1, 3, 2])])             # [B, NH, S, P]
        d_skip = g.op('Mul', [xh, g.const(f'D_{l}', np.full((1, NH, 1, 1), spec.get('mamba_D', 1.0), dtype=np.float32))])
        y = g.op('Add', [g.op('Add', [g.op('MatMul', [scores, xdt]), from_state]), d_skip])
        # S_new = exp(G_S) S0 + sum_j exp(G_S - G_j) dt_j x_j B_j^T
        g_last = slice_last(Gs, -1, 2 ** 62)                                                  # [B, NH, 1]
        x_dec = g.op('Mul', [xdt, g.op('Exp', [g.op('Unsqueeze', [g.op('Sub', [g_last, Gs]), ax[3]])])])
        s_new = g.op('Add', [g.op('Mul', [s0, g.op('Exp', [g.op('Unsqueeze', [g_last, ax[3]])])]),
                             g.op('MatMul', [g.op('Transpose', [x_dec], perm=[0, 1, 3, 2]), bm])])
        present_output(s_new, f'present_ssm.{l}', ['batch_size', NH, P, N])
        # Granite's gated RMSNorm: rmsnorm(y * silu(z)), then out_proj
        gated = g.op('Mul', [merge_heads(y, NH, P), silu(linear(n, f'l{l}.in_z'))])
        return linear(rmsnorm(gated), f'l{l}.out_proj')

    for l, kind in enumerate(types):
        n = rmsnorm(x)
        if kind == 'conv':
            h = short_conv(l, n)
        elif kind == 'linear_attention':
            h = linear_attention(l, n)
        elif kind == 'mamba':
            h = mamba(l, n)
        else:
            h = attention(l, n, kind)
        x = g.op('Add', [x, h])
        n = rmsnorm(x)
        x = g.op('Add', [x, linear(g.op('Mul', [silu(linear(n, f'l{l}.w_gate')), linear(n, f'l{l}.w_up')]), f'l{l}.w_down')])
    g.op('MatMul', [rmsnorm(x), g.const('unembed', w['unembed'])], name='logits')
    outputs.insert(0, helper.make_tensor_value_info('logits', TensorProto.FLOAT, ['batch_size', 'sequence_length', V]))
    graph = helper.make_graph(g.nodes, f'rlxkv_{spec["folder"].replace("-", "_")}', inputs, outputs, g.inits)
    return finish_model(graph)


def build_embed_tokens(spec, w):
    """Qwen3.5's embed_tokens.onnx: input_ids [B, S] -> inputs_embeds [B, S, hidden]."""
    g = Graph()
    g.op('Gather', [g.const('embed', w['embed']), 'input_ids'], name='inputs_embeds')
    graph = helper.make_graph(
        g.nodes, 'rlxkv_embed_tokens',
        [helper.make_tensor_value_info('input_ids', TensorProto.INT64, ['batch_size', 'sequence_length'])],
        [helper.make_tensor_value_info('inputs_embeds', TensorProto.FLOAT, ['batch_size', 'sequence_length', spec['hidden']])],
        g.inits)
    return finish_model(graph)


def finish_model(graph):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', OPSET)],
                              producer_name='rlxkv scripts/make_onnx_model.py')
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def hybrid_config(name, spec, f16):
    """config.json as the real checkpoints spell it (the fields transformers.js reads, and the ones
    a cache needs: layer_types, windows, state sizes)."""
    D, H, KVH, DH = spec['hidden'], spec['heads'], spec['kv_heads'], spec['head_dim']
    types = spec['layer_types']
    js_config = {'dtype': 'fp32'}
    if f16:
        js_config['kv_cache_dtype'] = 'float16'
    common = {
        'vocab_size': HYBRID_VOCAB, 'hidden_size': D, 'intermediate_size': spec['ff'], 'num_hidden_layers': len(types),
        'num_attention_heads': H, 'num_key_value_heads': KVH, 'head_dim': DH, 'layer_types': types,
        'max_position_embeddings': MAX_POSITIONS, 'rope_theta': spec['rope_theta'],
        'bos_token_id': HYBRID_BOS, 'eos_token_id': None, 'pad_token_id': None, 'tie_word_embeddings': False,
    }
    rlxkv = {'model': f'rlxkv-random-{name}', 'seed': spec['seed'], 'kv_dtype': 'float16' if f16 else 'float32'}
    if spec.get('base', name) == 'lfm2':
        return {'architectures': ['Lfm2ForCausalLM'], 'model_type': 'lfm2', **common,
                'norm_eps': 1e-6, 'conv_bias': False, 'conv_L_cache': spec['conv_L_cache'],
                'full_attn_idxs': [i for i, t in enumerate(types) if t != 'conv'],
                'sliding_window': spec['sliding_window'], 'use_cache': True, 'torch_dtype': 'float32',
                'transformers.js_config': js_config, 'rlxkv': rlxkv}
    if spec.get('base', name) == 'granite4h':
        # As ibm-granite/granite-4.0-h-350m's config.json spells it: no head_dim (hidden_size /
        # num_attention_heads), no RoPE (position_embedding_type 'nope'), a dense shared MLP (no experts).
        granite = {k: v for k, v in common.items() if k not in ('head_dim', 'rope_theta')}
        return {'architectures': ['GraniteMoeHybridForCausalLM'], 'model_type': 'granitemoehybrid', **granite,
                'shared_intermediate_size': spec['ff'], 'num_local_experts': 0, 'num_experts_per_tok': 0,
                'position_embedding_type': 'nope', 'rms_norm_eps': 1e-6, 'hidden_act': 'silu',
                'attention_multiplier': float(1 / np.sqrt(DH)), 'embedding_multiplier': 1.0, 'residual_multiplier': 1.0,
                'logits_scaling': 1.0, 'attention_bias': False, 'attention_dropout': 0.0,
                **{k: spec[k] for k in ('mamba_n_heads', 'mamba_d_head', 'mamba_n_groups', 'mamba_d_state',
                                        'mamba_d_conv', 'mamba_expand')},
                'mamba_chunk_size': 256, 'mamba_conv_bias': False, 'mamba_proj_bias': False,
                'use_cache': True, 'torch_dtype': 'float32', 'transformers.js_config': js_config, 'rlxkv': rlxkv}
    if spec.get('base', name) == 'gemma3':
        return {'architectures': ['Gemma3ForCausalLM'], 'model_type': 'gemma3_text', **common,
                'sliding_window': spec['sliding_window'], 'sliding_window_pattern': spec['sliding_window_pattern'],
                'rope_local_base_freq': spec['rope_local_base_freq'], 'query_pre_attn_scalar': DH,
                'rms_norm_eps': 1e-6, 'hidden_activation': 'gelu_pytorch_tanh', 'use_cache': True,
                'torch_dtype': 'float32', 'transformers.js_config': js_config, 'rlxkv': rlxkv}
    text_config = {
        'model_type': 'qwen3_5_text', **common, 'rms_norm_eps': 1e-6, 'full_attention_interval': 4,
        'linear_conv_kernel_dim': spec['linear_conv_kernel_dim'],
        'linear_num_key_heads': spec['linear_num_key_heads'], 'linear_num_value_heads': spec['linear_num_value_heads'],
        'linear_key_head_dim': spec['linear_key_head_dim'], 'linear_value_head_dim': spec['linear_value_head_dim'],
        'rope_parameters': {'rope_type': 'default', 'rope_theta': spec['rope_theta'], 'mrope_interleaved': True,
                            'mrope_section': [3, 3, 2], 'partial_rotary_factor': 1.0},
    }
    return {'architectures': ['Qwen3_5ForConditionalGeneration'], 'model_type': 'qwen3_5',
            'text_config': text_config,
            # read by get_rope_index (spatial_merge_size) even for text; no vision_encoder.onnx is written
            'vision_config': {'model_type': 'qwen3_5', 'spatial_merge_size': 2},
            'image_token_id': None, 'video_token_id': None, 'vision_start_token_id': None,
            'bos_token_id': HYBRID_BOS, 'eos_token_id': None, 'pad_token_id': None, 'tie_word_embeddings': False,
            'use_cache': True, 'torch_dtype': 'float32', 'transformers.js_config': js_config, 'rlxkv': rlxkv}


def write_hybrid(out, name):
    """Writes HYBRID_KINDS[name]'s two folders: float32 caches and -f16kv (every cache tensor float16)."""
    spec = HYBRID_KINDS[name]
    w = hybrid_weights(spec)
    for f16 in (False, True):
        folder = os.path.join(out, spec['folder'] + ('-f16kv' if f16 else ''))
        os.makedirs(os.path.join(folder, 'onnx'), exist_ok=True)
        cache_dtype = TensorProto.FLOAT16 if f16 else TensorProto.FLOAT
        if spec.get('base', name) == 'qwen3_5':
            onnx.save(build_embed_tokens(spec, w), os.path.join(folder, 'onnx', 'embed_tokens.onnx'))
            onnx.save(build_hybrid(spec, w, cache_dtype, True), os.path.join(folder, 'onnx', 'decoder_model_merged.onnx'))
        else:
            onnx.save(build_hybrid(spec, w, cache_dtype, False), os.path.join(folder, 'onnx', 'model.onnx'))
        tokenizer, tokenizer_config = tokenizer_files(HYBRID_BOS)
        files = [('config.json', hybrid_config(name, spec, f16)), ('tokenizer.json', tokenizer),
                 ('tokenizer_config.json', tokenizer_config),
                 ('generation_config.json', {'bos_token_id': HYBRID_BOS, 'eos_token_id': None, 'pad_token_id': None})]
        for file, obj in files:
            with open(os.path.join(folder, file), 'w', encoding='utf-8') as f:
                json.dump(obj, f, indent=2, ensure_ascii=False)
                f.write('\n')
        print(f'make_onnx_model: {folder}/')


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--weights')
    ap.add_argument('--shape', choices=sorted(SHAPES))
    ap.add_argument('--kind', action='append', choices=sorted(HYBRID_KINDS), help='repeatable')
    ap.add_argument('--out', required=True)
    args = ap.parse_args()
    if args.kind:
        for name in HYBRID_KINDS:  # in this order whatever the arguments' (build.sh judges by the last folder)
            if name in args.kind:
                write_hybrid(args.out, name)
        return
    if args.shape:
        manifest, w = random_model(args.shape)
        folder = os.path.join(args.out, SHAPES[args.shape]['folder'])
        write_folder(folder, manifest, build_graph(manifest, w, TensorProto.FLOAT), False)
        print(f'make_onnx_model: {folder}/')
        return
    if not args.weights:
        ap.error('--weights, --shape or --kind is required')
    manifest, w = load_weights(args.weights)
    for name, kv_dtype in [('rlxkv-demo', TensorProto.FLOAT), ('rlxkv-demo-f16kv', TensorProto.FLOAT16)]:
        folder = os.path.join(args.out, name)
        write_folder(folder, manifest, build_graph(manifest, w, kv_dtype), kv_dtype == TensorProto.FLOAT16)
        print(f'make_onnx_model: {folder}/')


if __name__ == '__main__':
    main()
