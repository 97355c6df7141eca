// Each of package.json's entry points has types: the browser build
// ('rlxkv/browser', the same API as 'rlxkv') and 'rlxkv/transformers', under
// every resolution tsc has (node10 finds the subpaths through typesVersions).
import initBrowser, { RlxkvError, type Cache } from 'rlxkv/browser';
import init from 'rlxkv';
import { layoutOf, type CachedGenerateOptions } from 'rlxkv/transformers';

const rlx = await initBrowser();
const cache: Cache = rlx.createCache({ capBytes: 1 << 20 });
const same: typeof init = initBrowser;
const layout = layoutOf({ num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, hidden_size: 64 });
const opts: CachedGenerateOptions = { storeDtype: 'f16' };
// @ts-expect-error the browser build's caches are typed as the package's
cache.noSuchMethod();
export { same, layout, opts, RlxkvError };
