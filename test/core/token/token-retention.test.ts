// No access token outlives its verification: the cache keeps identities under a digest, the header memo keeps
// copies of headers, and nothing else holds a token. Checked in a heap snapshot of a child process, since a slice
// of a token (a header segment, say) keeps the whole token alive in V8 without looking like it.
import assert from 'node:assert/strict';
import { execFileSync } from '../../helpers/child-process.js';
import { test } from 'node:test';

test('a verified token, cached or refused, is not in the heap once its requests are done; a token still in use is', () => {
  const script = `
    import { createHash } from 'node:crypto';
    import { getHeapSnapshot } from 'node:v8';
    import { startTestIssuer } from ${JSON.stringify(new URL('../../helpers/fake-issuer.ts', import.meta.url).href)};
    import { createTokenVerifier } from ${JSON.stringify(new URL('../../../src/core/token/create-token-verifier.ts', import.meta.url).href)};
    const RESOURCE = 'https://mcp.example.com/mcp';
    const issuer = await startTestIssuer({ algs: ['ES256'] });
    const verifier = createTokenVerifier({ issuer: issuer.issuer, resource: RESOURCE, httpTimeoutMs: 2000 });
    const digest = (text) => createHash('sha256').update(text).digest('hex');
    const gone = new Set();
    // In a function of its own, so that no variable of this scope holds a token afterwards.
    async function useTokens() {
      const once = await issuer.sign({ aud: RESOURCE, jti: 'once' });
      const reused = await issuer.sign({ aud: RESOURCE, jti: 'reused' });
      const refused = await issuer.sign({ aud: 'https://elsewhere.example.com/mcp', jti: 'refused' });
      await verifier.verify(once);
      for (let i = 0; i < 3; i++) await verifier.verify(reused); // cached from its second use
      await verifier.verify(refused).catch(() => {});
      verifier.cachedOrVerify(reused); // answered from the cache
      for (const token of [once, reused, refused]) gone.add(digest(token));
    }
    await useTokens();
    const kept = await issuer.sign({ aud: RESOURCE, jti: 'kept' });
    await verifier.verify(kept);
    /x/.exec('y'); // RegExp's last-match statics hold the last input they saw
    globalThis.gc();
    globalThis.gc();
    const chunks = [];
    for await (const chunk of getHeapSnapshot()) chunks.push(chunk);
    const { strings } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const found = strings.filter((text) => text.length > 100 && text.length < 2000).map(digest);
    console.log(JSON.stringify({ gone: found.filter((d) => gone.has(d)).length, kept: found.includes(digest(kept)) }));
    await issuer.close();
  `;
  const out = execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '--eval', script], { encoding: 'utf8', timeout: 60_000 });
  const result = JSON.parse(out.trim().split('\n').at(-1)!) as { gone: number; kept: boolean };
  assert.equal(result.kept, true, 'the snapshot shows a token still referenced (the check can fail)');
  assert.equal(result.gone, 0, 'no token that was done with is still in the heap');
});
