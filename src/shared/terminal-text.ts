/**
 * Text for a terminal, from what programs and servers wrote (their messages, their code, the
 * names they chose): control characters (escape sequences that clear the screen, move the
 * cursor, or make links; carriage returns that overwrite a line) and the invisible characters
 * that format text (bidi overrides and isolates that reorder it, zero-width characters, soft
 * hyphens, tag characters) are shown as `\u{…}`, so the reader sees what is there. Line breaks
 * and tabs stay. The CLI, the HTML report and the `verbose` output show such text this way.
 */
const HIDDEN = /(?![\t\n])[\p{Cc}\p{Cf}]/gu;

export function terminalText(text: string): string {
  return text.replace(HIDDEN, (character) => `\\u{${(character.codePointAt(0) as number).toString(16)}}`);
}
