/** What other folders may use of history/: they import it from here, never from its files. */
export { AgentHistory } from "./agent-history.ts";
export { validateHistoryQuery } from "./history-index.ts";
export type { HistoryQuery } from "./history-index.ts";
export { DEFAULT_KEEP_VALUES, KeptValues, readKeepValues } from "./kept-values.ts";
export type { KeepValuesOption, KeepValuesRule } from "./kept-values.ts";
export { normalizeHistory } from "./normalize.ts";
export { choosePreview, readHistoryPreview } from "./preview.ts";
export type { HistoryPreviewOption, HistoryPreviewRule, PreviewEntry } from "./preview.ts";
export { MAX_RECORDED_ATTEMPTS, createRecord, programHash } from "./record.ts";
export type { AttemptRecord, HistoryRecord, OutcomeSummary, ProgramSource, RecordInput, RepairSkipped, SerializedRecord, Speaker } from "./record.ts";
export { buildTrace } from "./trace.ts";
export type { TraceEntry, TraceNode } from "./trace.ts";
