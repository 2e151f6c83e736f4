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
] as const;

/** One of {@link ERROR_TYPES}. */
export type ErrorType = (typeof ERROR_TYPES)[number];

/** `ok` for a value, `error` for any failure. */
export type OutcomeStatus = "ok" | "error";

const RETRIABLE_TYPES: ReadonlySet<ErrorType> = new Set<ErrorType>(["provider", "invalid_code", "timeout", "store"]);

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

/**
 * The envelope every dynamic call resolves to.
 *
 * @example
 * const r = await calc.add(3);
 * if (r.ok) console.log(r.value);
 * else console.error(r.errorType, r.errorMessage);
 */
export class Outcome<T = unknown> implements OutcomeFields {
  readonly status: OutcomeStatus;
  readonly ok: boolean;
  // Declared, not initialised: an ok outcome has no errorType key and an error outcome no value key.
  declare readonly value?: T;
  declare readonly errorType?: ErrorType;
  declare readonly errorMessage?: string;
  readonly retriable: boolean;
  readonly callId: string;

  private constructor(fields: OutcomeFields & { value?: T }) {
    this.status = fields.status;
    this.ok = fields.ok;
    const self = this as { -readonly [K in keyof Outcome<T>]: Outcome<T>[K] };
    if (fields.ok) self.value = fields.value;
    if (fields.errorType !== undefined) self.errorType = fields.errorType;
    if (fields.errorMessage !== undefined) self.errorMessage = fields.errorMessage;
    this.retriable = fields.retriable;
    this.callId = fields.callId;
    Object.freeze(this);
  }

  /** A successful outcome carrying `value`. */
  static success<T>(callId: string, value: T): Outcome<T> {
    return new Outcome<T>({ status: "ok", ok: true, value, retriable: false, callId });
  }

  /**
   * A failed outcome of the given type. It is retriable when its type is, or when `retriable`
   * says so of this failure (its sandbox process was lost; a tool's failure that may pass).
   */
  static failure<T = never>(callId: string, errorType: ErrorType, errorMessage: string, options: { retriable?: boolean } = {}): Outcome<T> {
    return new Outcome<T>({
      status: "error",
      ok: false,
      errorType,
      errorMessage,
      retriable: isRetriable(errorType) || options.retriable === true,
      callId,
    });
  }

  /**
   * The value of a successful call, or a thrown {@link ImprovError} for a failed one.
   *
   * @example
   * const sum = (await calc.add(3)).unwrap();
   */
  unwrap(): T {
    if (this.ok) return this.value as T;
    throw new ImprovError(this.errorType ?? "execution", this.errorMessage ?? "The call failed.", {
      callId: this.callId,
      retriable: this.retriable,
    });
  }
}

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
