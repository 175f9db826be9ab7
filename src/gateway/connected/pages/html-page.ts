/**
 * The connected-account pages' HTML: one escape function for every value, one layout, and the headers every page
 * and redirect carries. The pages need no script, so the policy allows none; nothing may frame them, and forms may
 * post only to the gateway itself.
 */
import type { ServerResponse } from 'node:http';
import { HTML_CONTENT_TYPE } from '../../../http/media-type.js';

/**
 * Headers of every page and redirect: no script, styles inline only, forms to the gateway, no framing (CSP Level 3
 * `frame-ancestors`), not cached, no `Referer` carrying a connect link to another site, no MIME sniffing.
 */
export const PAGE_SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
  'Cache-Control': 'no-store',
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
});

/**
 * Escapes text for HTML element content and double- or single-quoted attribute values.
 *
 * @example
 * escapeHtml('<b title="x">'); // '&lt;b title=&quot;x&quot;&gt;'
 */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/**
 * HTML already escaped, made only by {@link html}: a page body cannot take a raw string by mistake.
 */
export interface SafeHtml {
  readonly __html: string;
}

/**
 * A template tag that escapes every interpolated value unless it is {@link SafeHtml} (or an array of them).
 *
 * @example
 * html`<p>Connected to ${server}.</p>`; // server escaped
 */
export function html(strings: TemplateStringsArray, ...values: readonly (string | SafeHtml | readonly SafeHtml[])[]): SafeHtml {
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += typeof value === 'string' ? escapeHtml(value) : Array.isArray(value) ? value.map((v: SafeHtml) => v.__html).join('') : (value as SafeHtml).__html;
    out += strings[i + 1]!;
  });
  return { __html: out };
}

/** A whole page: a title and its body. */
export function renderPage(title: string, body: SafeHtml): string {
  return html`<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${title}</title>
<style>body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;line-height:1.4}
ul{padding:0;list-style:none}li{display:flex;justify-content:space-between;align-items:center;padding:.4rem 0;border-bottom:1px solid #ddd}
button{padding:.3rem .8rem}code{background:#eee;padding:0 .2rem}</style></head>
<body><h1>${title}</h1>
${body}
</body></html>
`.__html;
}

/** Sends a page with its status and the {@link PAGE_SECURITY_HEADERS}, plus `extra` headers (an `Allow`, cookies). */
export function sendPage(res: ServerResponse, status: number, title: string, body: SafeHtml, extra: Readonly<Record<string, string | string[]>> = {}): void {
  const text = renderPage(title, body);
  res.writeHead(status, { ...PAGE_SECURITY_HEADERS, ...extra, 'Content-Type': HTML_CONTENT_TYPE, 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Sends a redirect to `location`, which the caller built itself (the login issuer's or the upstream's
 * authorization URL, or a fixed gateway path): never a URL taken from the request.
 */
export function sendRedirect(res: ServerResponse, status: 302 | 303, location: URL, cookies: readonly string[] = []): void {
  res.writeHead(status, { ...PAGE_SECURITY_HEADERS, Location: location.href, 'Content-Length': 0, ...(cookies.length ? { 'Set-Cookie': [...cookies] } : {}) });
  res.end();
}
