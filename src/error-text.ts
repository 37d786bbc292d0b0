// How a caught value reads in a log line, an answer or a recorded cause: one wording everywhere.

/** The error's message, or the value as text when something other than an Error was thrown. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The message and the stack, for a failure whose origin matters more than its wording (a fatal
 * one, a start that failed). The stack already begins with the message unless the message was
 * changed after the error was made; then the message goes first, so it is never lost.
 */
export function errorDetail(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const stack = error.stack ?? '';
  return stack.includes(error.message) ? stack : `${error.message}\n${stack}`;
}

/** The error's code when it carries one as text (a SQLSTATE, the driver's or the system's), else null. */
export function errorCode(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : null;
}
