// The development server's early refresh refusal keeps a bounded record: grants whose newest token has expired
// are dropped when a token is recorded, and past the cap the grant recorded longest ago goes first.
import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import type { RefreshTokenContext, TokenIssuedContext } from 'oidc-provider';
import { EarlyRefreshRefusal, MAX_RECORDED_GRANTS } from '../../examples/dev/early-refresh.js';

function issuedOn(grantId: string, lifetime: number): TokenIssuedContext {
  return { oidc: { entities: { AccessToken: { grantId } } }, body: { expires_in: lifetime } } as unknown as TokenIssuedContext;
}

function refreshOf(grantId: string): RefreshTokenContext {
  return { oidc: { entities: { RefreshToken: { grantId } } } } as unknown as RefreshTokenContext;
}

function refusal(): EarlyRefreshRefusal {
  return new EarlyRefreshRefusal((description) => new Error(description));
}

describe('EarlyRefreshRefusal', () => {
  it('drops the grants whose token has expired when it records another', () => {
    mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
    try {
      const record = refusal();
      record.recordIssued(issuedOn('short', 60));
      record.recordIssued(issuedOn('long', 3600));
      assert.equal(record.size, 2);
      mock.timers.tick(61_000);
      record.recordIssued(issuedOn('new', 60));
      assert.equal(record.size, 2, 'the expired grant is dropped');
      assert.throws(() => record.refuseIfEarly(refreshOf('long')), /still valid for/);
      assert.throws(() => record.refuseIfEarly(refreshOf('new')), /still valid for/);
      assert.doesNotThrow(() => record.refuseIfEarly(refreshOf('short')));
    } finally {
      mock.timers.reset();
    }
  });

  it(`keeps at most ${MAX_RECORDED_GRANTS} grants, forgetting the one recorded longest ago`, () => {
    const record = refusal();
    for (let i = 0; i < MAX_RECORDED_GRANTS; i++) record.recordIssued(issuedOn(`grant-${i}`, 3600));
    // Recorded again: now the newest, so not the one dropped.
    record.recordIssued(issuedOn('grant-0', 3600));
    record.recordIssued(issuedOn('one-more', 3600));
    assert.equal(record.size, MAX_RECORDED_GRANTS);
    assert.doesNotThrow(() => record.refuseIfEarly(refreshOf('grant-1')), 'the oldest record is forgotten');
    assert.throws(() => record.refuseIfEarly(refreshOf('grant-0')), /still valid for/);
    assert.throws(() => record.refuseIfEarly(refreshOf('one-more')), /still valid for/);
  });
});
