/**
 * Text for a terminal, from what programs wrote (their messages, their code, the names they
 * chose): control characters (escape sequences that clear the screen, move the cursor, or
 * make links; carriage returns that overwrite a line) and the invisible characters that format
 * text (bidi overrides and isolates that reorder it, zero-width characters, soft hyphens, tag
 * characters) are shown as `\u{…}`, so the analyst sees what is there. Line breaks and tabs
 * stay. The HTML report shows text from programs the same way.
 */
const HIDDEN = /(?![\t\n])[\p{Cc}\p{Cf}]/gu;

export function terminalText(text: string): string {
  return text.replace(HIDDEN, (character) => `\\u{${(character.codePointAt(0) as number).toString(16)}}`);
}
