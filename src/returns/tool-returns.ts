import { formatLettaTime } from '../time';

/**
 * The text a tool's return becomes (Letta's `validate_function_response`): null → "None", strings as
 * they are, anything else as JSON.
 */
export function stringifyReturn(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

/** Python's repr of what JSON carries (strings, numbers, None, booleans, lists, dicts), as Letta's tools show it. */
export function pythonRepr(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'string') {
    const quote = value.includes("'") && !value.includes('"') ? '"' : "'";
    const escaped = value
      .replace(/\\/g, '\\\\')
      .replace(/\n/g, '\\n')
      .replace(/\r/g, '\\r')
      .replace(/\t/g, '\\t')
      .replaceAll(quote, `\\${quote}`);
    return `${quote}${escaped}${quote}`;
  }
  if (Array.isArray(value)) return `[${value.map(pythonRepr).join(', ')}]`;
  if (typeof value === 'object')
    return `{${Object.entries(value)
      .map(([k, v]) => `${pythonRepr(k)}: ${pythonRepr(v)}`)
      .join(', ')}}`;
  return String(value);
}

/** Python's `str()`: a string as it is, anything else as its repr. */
export const pythonStr = (value: unknown): string => (typeof value === 'string' ? value : pythonRepr(value));

/** Letta's return_char_limit of a tool that names none (FUNCTION_RETURN_CHAR_LIMIT). */
export const DEFAULT_RETURN_CHAR_LIMIT = 50_000;

/**
 * Cuts a return at the tool's limit with Letta's note (v3 loop), so the model knows it was cut. `length`
 * is the whole return's, when `text` is only its head (the sandbox sends back no more than the limit).
 */
export function truncateReturn(text: string, limit: number, length = text.length): string {
  if (length <= limit) return text;
  return `${text.slice(0, limit)}... [NOTE: function output was truncated since it exceeded the character limit (${length} > ${limit})]`;
}

/** A return as the API shows it: itself while its text fits the limit, else that text cut with Letta's note. */
export function cappedReturn(value: unknown, limit: number, length?: number): unknown {
  const text = stringifyReturn(value);
  const whole = length ?? text.length;
  return whole > limit ? truncateReturn(text, limit, whole) : value;
}

/** Letta's `package_function_response`: what the model sees as the tool message. */
export function packageFunctionResponse(
  ok: boolean,
  message: string,
  timezone = 'UTC',
  now = new Date(),
): string {
  return JSON.stringify(
    { status: ok ? 'OK' : 'Failed', message, time: formatLettaTime(now, timezone) },
    null,
    2,
  );
}

/** The API shows the packaged return's `message` as `tool_return`. */
export function unpackageFunctionResponse(packaged: string): string {
  try {
    const parsed = JSON.parse(packaged);
    if (parsed && typeof parsed === 'object' && 'message' in parsed) return stringifyReturn(parsed.message);
  } catch {
    // not packaged: shown as it is
  }
  return packaged;
}

/** Letta's `get_friendly_error_msg`, capped at 1000 characters. */
export function friendlyError(functionName: string, exceptionName: string, message: string): string {
  const text = `Error executing function ${functionName}: ${exceptionName}: ${message}`;
  return text.length > 1000 ? text.slice(0, 1000) : text;
}
