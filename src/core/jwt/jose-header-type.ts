/**
 * A JOSE header's `typ` as a media type to compare: lower-cased, without the `application/` prefix that RFC 7515
 * §4.1.9 lets a sender omit or include (`at+jwt`, `application/at+jwt`, `dpop+jwt` all compare as written bare).
 *
 * @example
 * joseHeaderType('Application/AT+JWT'); // 'at+jwt'
 */
export function joseHeaderType(typ: string): string {
  const type = typ.toLowerCase();
  return type.startsWith('application/') ? type.slice('application/'.length) : type;
}
