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
    # cos/sin of p * f by the angle-addition formulas from two float32 tables,
    # p = ROPE_LO * a + b: exact to float32 rounding at every position below
    # ROPE_LO * ROPE_HI. (A float32 angle p * f would lose ~1e-4 rad by
    # position 1000, and onnxruntime-web 1.31's wasm has no float64 kernels.)
    inv_freq = w['invFreq'].astype(np.float64)
    lo_angles = np.arange(ROPE_LO, dtype=np.float64)[:, None] * inv_freq[None, :]
    hi_angles = (ROPE_LO * np.arange(ROPE_HI, dtype=np.float64))[:, None] * inv_freq[None, :]
    f32 = lambda a: a.astype(np.float32)
    cos_lo, sin_lo = g.const('rope_cos_lo', f32(np.cos(lo_angles))), g.const('rope_sin_lo', f32(np.sin(lo_angles)))
    cos_hi, sin_hi = g.const('rope_cos_hi', f32(np.cos(hi_angles))), g.const('rope_sin_hi', f32(np.sin(hi_angles)))
    lo_n = g.const('rope_lo_n', np.array(ROPE_LO, dtype=np.int64))
    p_hi, p_lo = g.op('Div', ['position_ids', lo_n]), g.op('Mod', ['position_ids', lo_n])
    c_hi, s_hi = g.op('Gather', [cos_hi, p_hi]), g.op('Gather', [sin_hi, p_hi])   # [B, S, HALF]
    c_lo, s_lo = g.op('Gather', [cos_lo, p_lo]), g.op('Gather', [sin_lo, p_lo])
    cos = g.op('Sub', [g.op('Mul', [c_hi, c_lo]), g.op('Mul', [s_hi, s_lo])])
    sin = g.op('Add', [g.op('Mul', [s_hi, c_lo]), g.op('Mul', [c_hi, s_lo])])
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--weights')
    ap.add_argument('--shape', choices=sorted(SHAPES))
    ap.add_argument('--out', required=True)
    args = ap.parse_args()
    if args.shape:
        manifest, w = random_model(args.shape)
        folder = os.path.join(args.out, SHAPES[args.shape]['folder'])
        write_folder(folder, manifest, build_graph(manifest, w, TensorProto.FLOAT), False)
        print(f'make_onnx_model: {folder}/')
        return
    if not args.weights:
        ap.error('--weights or --shape is required')
    manifest, w = load_weights(args.weights)
    for name, kv_dtype in [('rlxkv-demo', TensorProto.FLOAT), ('rlxkv-demo-f16kv', TensorProto.FLOAT16)]:
        folder = os.path.join(args.out, name)
        write_folder(folder, manifest, build_graph(manifest, w, kv_dtype), kv_dtype == TensorProto.FLOAT16)
        print(f'make_onnx_model: {folder}/')


if __name__ == '__main__':
    main()
