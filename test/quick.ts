// `npm run test:quick`: the unit layer alone, for a first check in well under a minute (see test/suite-files.ts for
// what it holds). `npm test` runs the same files in a few shards (test/unit-<n>.ts) beside everything else.
// First: a failing `assert.ok` without a message reported at once (see the helper), as in `npm test`.
import './helpers/cheap-assert-messages.js';
import { pathToFileURL } from 'node:url';
import { unitLayerFiles } from './suite-files.js';

for (const file of unitLayerFiles()) await import(pathToFileURL(file).href);
