// The shape of an entry's KV under a cache's layout (heads × tokens ×
// headDim values a block, and the layer count): checked on inserts
// (js/args.js re-exports it) and on every blob a store reads.

/** Every block of an entry of nTokens tokens against a layout: a RangeError naming the first that differs. */
export function checkShape(nTokens, { k, v }, layout, name = 'kv') {
  if (!layout) return;
  if (layout.layers && k.length !== layout.layers) {
    throw new RangeError(`${name}: ${k.length} layers, but the layout has ${layout.layers}`);
  }
  const want = layout.heads * layout.headDim * nTokens;
  for (const [side, blocks] of [['k', k], ['v', v]]) {
    for (let i = 0; i < blocks.length; i++) {
      if (blocks[i].length !== want) {
        throw new RangeError(`${name}.${side}[${i}] has ${blocks[i].length} values; the ${layout.order} layout needs ` +
          `${layout.heads} heads × ${nTokens} tokens × ${layout.headDim} = ${want}`);
      }
    }
  }
}
