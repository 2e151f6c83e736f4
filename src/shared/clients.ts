/**
 * The `openai` SDK, loaded only when an OpenAI provider or embedder is used, so importing improv
 * does not load it; and what is said of a database's address in messages. (`pg` is loaded the
 * same way where it is used; a loader here would put `pg`'s types in the package's own, which an
 * application reads without `@types/pg`.)
 */

let openaiModule: Promise<typeof import("openai")> | undefined;

/** The `openai` SDK, loaded once, on first use. */
export function loadOpenAI(): Promise<typeof import("openai")> {
  return (openaiModule ??= import("openai"));
}

/** A postgres:// URL fit for messages and labels: no password, no query. */
export function postgresLabel(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = "";
    parsed.search = "";
    return parsed.href;
  } catch {
    return "postgres://(unparsable URL)";
  }
}
