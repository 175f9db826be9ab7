/**
 * Reading the development authorization server's pages: their forms and their error text. Deliberately small:
 * it understands those pages only (`#login-form`, `#consent-form`, `#deny-form`, `#error`,
 * `#error_description`), not HTML in general.
 *
 * @module
 */

/** A form of a page: where it posts, its fields, and its submit button's name and value. */
export interface ParsedForm {
  id?: string;
  action: string;
  method: string;
  fields: Array<[string, string]>;
  submit?: [string, string];
}

function attr(tag: string, name: string): string | undefined {
  const match = new RegExp(`\\s${name}\\s*=\\s*("([^"]*)"|'([^']*)'|([^\\s>]+))`, 'i').exec(tag);
  if (!match) return undefined;
  return decodeEntities(match[2] ?? match[3] ?? match[4] ?? '');
}

function decodeEntities(value: string): string {
  return value
    .replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)))
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** The forms of an HTML page, read with the few rules the development server's pages need. */
export function parseForms(html: string): ParsedForm[] {
  const forms: ParsedForm[] = [];
  for (const match of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)) {
    const [, openTag = '', inner = ''] = match;
    const fields: Array<[string, string]> = [];
    for (const input of inner.matchAll(/<input\b[^>]*>/gi)) {
      const name = attr(input[0], 'name');
      if (name) fields.push([name, attr(input[0], 'value') ?? '']);
    }
    const button = /<button\b[^>]*>/i.exec(inner)?.[0];
    const buttonName = button && attr(button, 'name');
    forms.push({
      id: attr(openTag, 'id'),
      action: attr(openTag, 'action') ?? '',
      method: (attr(openTag, 'method') ?? 'get').toUpperCase(),
      fields,
      submit: button && buttonName ? [buttonName, attr(button, 'value') ?? ''] : undefined,
    });
  }
  return forms;
}

/** What an error page says: its `#error` and `#error_description`, or its title. */
export function pageError(html: string): string {
  const error = /id="error"[^>]*>([\s\S]*?)</i.exec(html)?.[1];
  const description = /id="error_description"[^>]*>([\s\S]*?)</i.exec(html)?.[1];
  const title = /<title>([\s\S]*?)<\/title>/i.exec(html)?.[1];
  return decodeEntities([error, description].filter(Boolean).join(': ') || title || 'unrecognised page');
}
