import { readFileSync } from "node:fs";
import type { HistoryRecord } from "../history/record.ts";
import { toJsonSafe, truncateString } from "../history/json-safe.ts";

/** The folder of prompt templates, beside `src/` and `dist/` alike. */
const PROMPTS_DIR = new URL("../../prompts/", import.meta.url);

function loadTemplate(name: string): string {
  return readFileSync(new URL(name, PROMPTS_DIR), "utf8");
}

const templates = { system: loadTemplate("system.md"), user: loadTemplate("user.md") };

/** Longest rendering of the arguments in the user prompt, so prompt size stays bounded. */
const MAX_ARGUMENT_CHARS = 2_000;
const MAX_CONTEXT_KEYS = 50;

/** What a prompt is rendered from. */
export interface PromptInput {
  readonly role: string;
  readonly method: string;
  readonly args: readonly unknown[];
  readonly kwargs: Readonly<Record<string, unknown>>;
  readonly contextKeys: readonly string[];
  readonly historyCount: number;
  /** The latest records, oldest first (at most `historyPreviewLimit`). */
  readonly historyPreview: readonly HistoryRecord[];
  /** The feedback block on an earlier attempt of this call, if any (see `repair.ts`). */
  readonly feedback?: string;
}

function render(template: string, values: Record<string, string>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (match, name: string) => values[name] ?? match);
}

/** Longest error message of a failed call shown in the history preview. @unit characters */
const MAX_PREVIEW_ERROR_CHARS = 200;

function previewLine(record: HistoryRecord): string {
  const status = record.outcome_summary.status;
  const errorType = record.outcome_summary.error_type;
  const error = typeof record.error_message === "string" && record.error_message !== "" ? `: ${truncateString(record.error_message.replace(/\s+/g, " "), MAX_PREVIEW_ERROR_CHARS)}` : "";
  return `- ${record.call_id} ${truncateString(record.method_name, 80)}: ${status}${errorType ? ` (${errorType})` : ""}${error}`;
}

/** The system prompt depends on the role alone, so it is rendered once per role. */
const systemPrompts = new Map<string, string>();
const MAX_CACHED_ROLES = 1_000;

function systemPrompt(role: string): string {
  let prompt = systemPrompts.get(role);
  if (prompt === undefined) {
    prompt = render(templates.system, { role });
    if (systemPrompts.size >= MAX_CACHED_ROLES) systemPrompts.clear();
    systemPrompts.set(role, prompt);
  }
  return prompt;
}

/** The system and user prompts for one call. Their size does not grow with history. */
export function renderPrompts(input: PromptInput): { system: string; user: string } {
  const keys = input.contextKeys.slice(0, MAX_CONTEXT_KEYS).map((key) => truncateString(key, 80));
  const extraKeys = input.contextKeys.length - keys.length;
  const preview = input.historyPreview.length === 0 ? "(no earlier calls)" : `Latest:\n${input.historyPreview.map(previewLine).join("\n")}`;
  const values = {
    role: input.role,
    method: input.method,
    args: truncateString(JSON.stringify(toJsonSafe(input.args, MAX_ARGUMENT_CHARS * 2)), MAX_ARGUMENT_CHARS),
    kwargs: truncateString(JSON.stringify(toJsonSafe(input.kwargs, MAX_ARGUMENT_CHARS * 2)), MAX_ARGUMENT_CHARS),
    context_keys: keys.length === 0 ? "(none)" : `${keys.join(", ")}${extraKeys > 0 ? `, and ${extraKeys} more` : ""}`,
    history_count: String(input.historyCount),
    history_preview: preview,
    feedback: input.feedback ?? "",
  };
  return { system: systemPrompt(input.role), user: render(templates.user, values) };
}
