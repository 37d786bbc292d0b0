// How a caught value reads in a log line, an answer or a recorded cause: one wording everywhere.

/** The error's message, or the value as text when something other than an Error was thrown. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The message and the stack, for a failure whose origin matters more than its wording (a fatal one). */
export function errorDetail(error: unknown): string {
  return error instanceof Error ? `${error.message}\n${error.stack ?? ''}` : String(error);
}
