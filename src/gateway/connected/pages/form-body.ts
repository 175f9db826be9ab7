/**
 * Reading a page form's body: `application/x-www-form-urlencoded` only, and bounded, so a large or slow upload is
 * refused without being buffered.
 */
import type { IncomingMessage } from 'node:http';
import { FORM_MEDIA_TYPE, mediaType } from '../../../http/media-type.js';

/** Largest form body read, in bytes: 4 KiB, room for a server name and a token. */
export const MAX_FORM_BYTES = 4 * 1024;

/** A form's fields, or why there are none: `too_large` (413), `wrong_type` (415). */
export type FormBody = URLSearchParams | 'too_large' | 'wrong_type';

/**
 * Reads the request's form. Stops reading past `maxBytes` without destroying the request, so that the 413 can still
 * be sent (with `Connection: close`, which ends the rest of the upload).
 */
export function readFormBody(req: IncomingMessage, maxBytes = MAX_FORM_BYTES): Promise<FormBody> {
  if (mediaType(req.headers['content-type']) !== FORM_MEDIA_TYPE) return Promise.resolve('wrong_type');
  const declared = Number(req.headers['content-length'] ?? '0');
  if (!(declared <= maxBytes)) return Promise.resolve('too_large');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      req.off('data', onData).off('end', onEnd).off('error', onError);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= maxBytes) {
        chunks.push(chunk);
        return;
      }
      done();
      req.pause();
      resolve('too_large');
    };
    const onEnd = (): void => {
      done();
      resolve(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
    };
    const onError = (error: Error): void => {
      done();
      reject(error);
    };
    req.on('data', onData).on('end', onEnd).on('error', onError);
  });
}
