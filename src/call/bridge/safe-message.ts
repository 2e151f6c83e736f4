// A path of two or more parts; a part may hold single spaces between words ("/Users/John Smith/app.js").
const HOST_PATH = /(?:file:\/\/)?(?:[A-Za-z]:)?(?:[\\/][\w.@%+~-]+(?: [\w.@%+~-]+)*){2,}(?::\d+){0,2}/g;
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
