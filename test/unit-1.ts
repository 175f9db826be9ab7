// A shard of the unit layer (see test/suite-files.ts): `npm test` runs each shard as one of its files.
import { fileURLToPath, pathToFileURL } from 'node:url';
import { shardFiles } from './suite-files.js';

for (const file of shardFiles(fileURLToPath(import.meta.url))) await import(pathToFileURL(file).href);
