// The memory store meets the shared TokenStore contract (see token-store-conformance.ts).
import { createMemoryTokenStore } from '../../../../src/gateway/connected/store/memory-token-store.js';
import { describeTokenStoreConformance } from './token-store-conformance.js';

describeTokenStoreConformance('memory store', {
  open: ({ maxEntries }) => Promise.resolve(createMemoryTokenStore({ maxEntries, maxBytes: 32 * 1024 })),
  boundsEntries: true,
  skip: false,
});
