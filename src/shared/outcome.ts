/**
 * The typed result of every dynamic call. A dynamic call never throws: it resolves to an
 * {@link Outcome}, and `unwrap()` turns an error outcome into a thrown {@link ImprovError}
 * when that is more convenient.
 */

/** Every kind of failure a dynamic call can end with. */
export const ERROR_TYPES = [
  "provider",
  "invalid_code",
  "execution",
  "timeout",
  "memory_limit",
  "budget_exceeded",
  "cancelled",
  "invalid_input",
  "store",
  "tool",
  "invalid_output",
  "knowledge",
] as const;

/** One of {@link ERROR_TYPES}. */
export type ErrorType = (typeof ERROR_TYPES)[number];

/** `ok` for a value, `error` for any failure. */
export type OutcomeStatus = "ok" | "error";

const RETRIABLE_TYPES: ReadonlySet<ErrorType> = new Set<ErrorType>(["provider", "invalid_code", "timeout", "store", "invalid_output", "knowledge"]);

/** Whether calling again may succeed where this error type failed. */
export function isRetriable(errorType: ErrorType): boolean {
  return RETRIABLE_TYPES.has(errorType);
}

/** Whether `value` names an error type. */
export function isErrorType(value: unknown): value is ErrorType {
  return typeof value === "string" && (ERROR_TYPES as readonly string[]).includes(value);
}

/** The fields an {@link Outcome} and an {@link ImprovError} share. */
export interface OutcomeFields {
  readonly status: OutcomeStatus;
  readonly ok: boolean;
  readonly errorType?: ErrorType;
  readonly errorMessage?: string;
  readonly retriable: boolean;
  readonly callId: string;
}

/** A call that succeeded: its value (typed by the method's `returns` schema, where one is declared). */
export interface OkOutcome<T = unknown> {
  readonly status: "ok";
  readonly ok: true;
  readonly value: T;
  readonly errorType?: undefined;
  readonly errorMessage?: undefined;
  readonly retriable: false;
  readonly callId: string;
  /** The value. */
  unwrap(): T;
}

/** A call that failed: why, and whether calling again may succeed. */
export interface FailedOutcome<T = unknown> {
  readonly status: "error";
  readonly ok: false;
  readonly value?: undefined;
  readonly errorType: ErrorType;
  readonly errorMessage: string;
  readonly retriable: boolean;
  readonly callId: string;
  /** Throws an {@link ImprovError} carrying the outcome's fields. */
  unwrap(): T;
}

/**
 * The envelope every dynamic call resolves to: a union discriminated by `ok`, so `if (r.ok)`
 * narrows `value` to the method's type and, otherwise, `errorType` and `errorMessage` to present.
 *
 * @example
 * const r = await calc.add(3);
 * if (r.ok) console.log(r.value);
 * else console.error(r.errorType, r.errorMessage);
 */
export type Outcome<T = unknown> = OkOutcome<T> | FailedOutcome<T>;

/** The one class behind every outcome (frozen instances; `unwrap` on its prototype). */
class OutcomeRecord<T> {
  declare readonly status: OutcomeStatus;
  declare readonly ok: boolean;
  // Declared, not initialised: an ok outcome has no errorType key and an error outcome no value key.
  declare readonly value?: T;
  declare readonly errorType?: ErrorType;
  declare readonly errorMessage?: string;
  declare readonly retriable: boolean;
  declare readonly callId: string;

  constructor(fields: OutcomeFields & { value?: T }) {
    const self = this as { -readonly [K in keyof OutcomeRecord<T>]: OutcomeRecord<T>[K] };
    self.status = fields.status;
    self.ok = fields.ok;
    if (fields.ok) self.value = fields.value;
    if (fields.errorType !== undefined) self.errorType = fields.errorType;
    if (fields.errorMessage !== undefined) self.errorMessage = fields.errorMessage;
    self.retriable = fields.retriable;
    self.callId = fields.callId;
    Object.freeze(this);
  }

  unwrap(): T {
    if (this.ok) return this.value as T;
    throw new ImprovError(this.errorType ?? "execution", this.errorMessage ?? "The call failed.", {
      callId: this.callId,
      retriable: this.retriable,
    });
  }
}

/** Makes outcomes, and tells them apart (`x instanceof Outcome`). */
export const Outcome = Object.freeze({
  /** A successful outcome carrying `value`. */
  success<T>(callId: string, value: T): OkOutcome<T> {
    return new OutcomeRecord<T>({ status: "ok", ok: true, value, retriable: false, callId }) as unknown as OkOutcome<T>;
  },
  /**
   * A failed outcome of the given type. It is retriable when its type is, unless `retriable`
   * says otherwise of this failure (its sandbox process was lost; a tool's failure that may
   * pass; a provider that refused the key).
   */
  failure<T = never>(callId: string, errorType: ErrorType, errorMessage: string, options: { retriable?: boolean | undefined } = {}): FailedOutcome<T> {
    return new OutcomeRecord<T>({ status: "error", ok: false, errorType, errorMessage, retriable: options.retriable ?? isRetriable(errorType), callId }) as unknown as FailedOutcome<T>;
  },
  [Symbol.hasInstance](value: unknown): value is Outcome {
    return value instanceof OutcomeRecord;
  },
});

/**
 * The error `Outcome.unwrap()` throws, and what construction-time misuse of the API throws
 * when it is about a call rather than an argument. It carries the outcome's fields.
 */
export class ImprovError extends Error implements OutcomeFields {
  override readonly name = "ImprovError";
  readonly status = "error" as const;
  readonly ok = false as const;
  readonly errorType: ErrorType;
  readonly errorMessage: string;
  readonly retriable: boolean;
  readonly callId: string;

  constructor(errorType: ErrorType, message: string, options: { callId?: string; cause?: unknown; retriable?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.errorType = errorType;
    this.errorMessage = message;
    this.retriable = options.retriable ?? isRetriable(errorType);
    this.callId = options.callId ?? "";
  }
}
