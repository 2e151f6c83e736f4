/**
 * improv runs on Node.js 24 or later. Imported first by the package's entry, so on an older
 * Node.js, importing improv says which Node.js it needs and how to get it, before anything else
 * fails in a way that does not say.
 */
export const MIN_NODE_MAJOR = 24;

/** Why this Node.js cannot run improv; undefined when it can. */
export function nodeVersionProblem(version: string = process.versions.node): string | undefined {
  const major = Number(version.split(".")[0]);
  if (major >= MIN_NODE_MAJOR) return undefined;
  return `improv needs Node.js ${MIN_NODE_MAJOR} or later; this is Node.js ${version}. Install Node.js ${MIN_NODE_MAJOR} (nvm install ${MIN_NODE_MAJOR}, or from nodejs.org), or run your script with npm's Node.js ${MIN_NODE_MAJOR}: npx -y node@${MIN_NODE_MAJOR} your-script.js.`;
}

const problem = nodeVersionProblem();
if (problem !== undefined) throw new Error(problem);
