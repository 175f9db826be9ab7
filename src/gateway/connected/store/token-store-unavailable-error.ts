import { CredentialStoreUnavailableError } from '../../upstream-auth/upstream-credentials.js';

/**
 * A token store could not answer: Redis unreachable or too slow, a lock held too long by another replica, or the
 * directory failing to read or write. Neither the client's fault nor a reason to serve without the store: the
 * gateway answers it as it answers its other unavailable stores (503 with `Retry-After`, see
 * `storeUnavailableError`). The message names what failed, never a key, a value or a secret.
 */
export class TokenStoreUnavailableError extends CredentialStoreUnavailableError {
  constructor(what: string, options?: { cause?: unknown }) {
    super(`the token store is unavailable (${what})`, options);
    this.name = 'TokenStoreUnavailableError';
  }
}
