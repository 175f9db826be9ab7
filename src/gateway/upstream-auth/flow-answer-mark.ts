/**
 * Which responses a caller flow (`caller-flow.ts`) wrote in the upstream's place (the connect flow's answers): a server set reads
 * a server's answer through a captured response and must tell such an answer, made for one caller and holding their
 * personal link, from a page the upstream itself sent, which it may serve again to others. Kept out of band (no
 * header, nothing in the body), so the client sees the answer as it is; weakly held, so a response is freed as usual.
 */
import type { ServerResponse } from 'node:http';
import { writeJson } from '../../http/write-response.js';
import type { CallerFlowAnswer } from './caller-flow.js';

const flowAnswers = new WeakSet<ServerResponse>();

/** Notes that `res` carries the caller flow's own answer, not the upstream's. */
export function markFlowAnswer(res: ServerResponse): void {
  flowAnswers.add(res);
}

/**
 * Whether `res` carries the caller flow's own answer (see {@link markFlowAnswer}).
 *
 * @example
 * await member.handle(req, captured, context);
 * if (isFlowAnswer(captured)) keepForThisCallerOnly();
 */
export function isFlowAnswer(res: ServerResponse): boolean {
  return flowAnswers.has(res);
}

/**
 * Writes a caller flow's answer: its JSON-RPC response as JSON, or, without one (a GET or DELETE), its status and
 * headers with an empty body. Call it only before the head is sent.
 */
export function writeFlowAnswer(res: ServerResponse, answer: CallerFlowAnswer): void {
  const headers = { ...answer.headers };
  if (answer.response !== undefined) writeJson(res, answer.status, answer.response, headers);
  else res.writeHead(answer.status, { ...headers, 'Content-Length': '0' }).end();
}
