/** Which calls a telemetry report covers: a time window (`--since`, `--until`), one role (`--role`), one method (`--method`). */
export interface ReportFilter {
  readonly since?: Date;
  readonly until?: Date;
  readonly role?: string;
  /** A method's name (`add`: in every role) or `role.method` (`calculator.add`). */
  readonly method?: string;
}

/** The filter as the report states it (`--json` prints it): each flag's value, null when not given. */
export interface ReportFilters {
  readonly since: string | null;
  readonly until: string | null;
  readonly role: string | null;
  readonly method: string | null;
}

/** Whether a call line with these fields is inside the filter. `time` is NaN when the line has no readable timestamp. */
export function matchesFilter(filter: ReportFilter, time: number, role: string, method: string): boolean {
  if (filter.since !== undefined || filter.until !== undefined) {
    if (Number.isNaN(time) || (filter.since !== undefined && time < filter.since.getTime()) || (filter.until !== undefined && time > filter.until.getTime())) return false;
  }
  if (filter.role !== undefined && role !== filter.role) return false;
  if (filter.method !== undefined && method !== filter.method && `${role}.${method}` !== filter.method) return false;
  return true;
}

export function stateFilter(filter: ReportFilter): ReportFilters {
  return {
    since: filter.since?.toISOString() ?? null,
    until: filter.until?.toISOString() ?? null,
    role: filter.role ?? null,
    method: filter.method ?? null,
  };
}

/** The flags that filtered, as a reader would type them (`--role calculator --since 2025-01-01T00:00:00.000Z`); empty when none did. */
export function describeFilters(filters: ReportFilters): string {
  return (["role", "method", "since", "until"] as const)
    .filter((flag) => filters[flag] !== null)
    .map((flag) => `--${flag} ${filters[flag]}`)
    .join(" ");
}
