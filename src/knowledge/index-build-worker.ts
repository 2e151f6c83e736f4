/**
 * An index build thread (started by `index-build.ts`): builds one graph, saves it, answers once.
 */
import { parentPort } from "node:worker_threads";
import { describeError } from "../shared/index.ts";
import { type BuildAnswer, type BuildJob, buildAndSave } from "./index-build.ts";

parentPort?.once("message", (job: BuildJob) => {
  let answer: BuildAnswer;
  try {
    answer = buildAndSave(job);
  } catch (error) {
    answer = { ok: false, message: describeError(error) };
  }
  parentPort?.postMessage(answer);
});
