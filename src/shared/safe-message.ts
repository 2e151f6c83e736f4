// A path of two or more parts, in any script ("/home/jürgen/.env"). A part before the last may
// hold single spaces between words ("C:\Users\John Smith\app.js"); the last may not, so the
// words after a path ("… keys.json is locked") stay.
const PART = String.raw`[\p{L}\p{N}\p{M}_.@%+~-]+`;
const HOST_PATH = new RegExp(String.raw`(?:file:\/\/)?(?:[A-Za-z]:)?(?:[\\/]${PART}(?: ${PART})*)+[\\/]${PART}(?::\d+){0,2}`, "gu");
const MAX_TOOL_MESSAGE_CHARS = 1_000;

/** A tool's failure as the program may read it: its message only (no stack), with host paths taken out, bounded. */
export function safeMessage(error: unknown): string {
  let text: string;
  try {
    text = error instanceof Error ? String(error.message) : typeof error === "string" ? error : "it failed with a value that is not an Error";
  } catch {
    text = "it failed with an error that could not be read";
  }
  // Cut before the paths are sought, so a huge message costs little; a path cut in two is still taken out.
  text = text.slice(0, MAX_TOOL_MESSAGE_CHARS * 4).replace(/\s+/g, " ").replace(HOST_PATH, "[path]").trim();
  if (text === "") text = "it failed without a message";
  return text.length > MAX_TOOL_MESSAGE_CHARS ? `${text.slice(0, MAX_TOOL_MESSAGE_CHARS)}…` : text;
}
