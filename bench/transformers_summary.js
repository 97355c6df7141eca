// Medians of one bench/transformers_workload.js result, as the JSON rows
// bench/report.mjs reads (times in ms; ratios per repetition, then the median).
import { median, pairRatio } from './stats.js';

export function summarize(r, label) {
  const of = (list, key) => median(list.map((t) => t[key]));
  return {
    label,
    id: r.id,
    store: r.store,
    model_kv_dtype: r.modelDtype,
    entry_dtype: r.entryDtype,
    prompt_tokens: r.promptTokens,
    restored_tokens: r.restoredTokens,
    kv_bytes: r.kvBytes,
    cold_reps: r.cold.length,
    warm_reps: r.warm.length,
    cold_ttft_ms: of(r.cold, 'ttft'),
    warm_ttft_ms: of(r.warm, 'ttft'),
    cold_over_warm: median(r.cold.map((c) => c.ttft)) / median(r.warm.map((w) => w.ttft)),
    lookup_ms: of(r.warm, 'lookup'),
    convert_ms: of(r.warm, 'convert'),
    restore_ms: of(r.warm, 'restore'),
    bare_lookup_ms: median(r.bare),
    // Each warm run's lookup + conversion over the bare lookup next to it.
    restore_over_bare: median(r.warm.map((w, i) => w.restore / r.bare[i])),
    convert_share: median(r.warm.map((w) => w.convert / w.restore)),
    // The same outside generate, 5× as many times.
    loop_reps: r.restoreLoop.length,
    loop_restore_ms: median(r.restoreLoop),
    loop_lookup_ms: median(r.lookupPart),
    convert_only_ms: median(r.convertOnly),
    // The whole restore over its own lookup + copy: 1 + the conversion's cost.
    loop_restore_over_lookup: pairRatio(r.restoreLoop, r.lookupPart),
    loop_convert_share: median(r.restoreLoop.map((t, i) => r.convertOnly[i] / t)),
    // ... and over a separate bare lookup + copy beside it.
    loop_bare_lookup_ms: median(r.bareLoop),
    loop_restore_over_bare: pairRatio(r.restoreLoop, r.bareLoop),
    restore_share_of_ttft: median(r.warm.map((w) => w.restore / w.ttft)),
    from_tensors_ms: of(r.warm, 'fromTensors'),
    insert_ms: of(r.warm, 'insert'),
    restore_at_open_ms: r.restoreAtOpen,
    restore_at_open_error: r.restoreAtOpenError,
  };
}
