/**
 * Text for a terminal, from what programs wrote (their messages, their code, the names they
 * chose): control characters (escape sequences that clear the screen, move the cursor, or
 * make links; carriage returns that overwrite a line) and the invisible characters that reorder
 * text (bidi overrides) are shown as `\u{…}`, so the analyst sees what is there. Line breaks
 * and tabs stay.
 */
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;

export function terminalText(text: string): string {
  return text.replace(HIDDEN, (character) => `\\u{${(character.codePointAt(0) as number).toString(16)}}`);
}
