/**
 * Formatters by time zone: building an Intl.DateTimeFormat costs far more than using one, and every
 * tool return and system prompt prints a time.
 */
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hour12: true,
      timeZoneName: 'short',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** Whether Intl knows the zone (an IANA name such as `Europe/Berlin`, or `UTC`). */
export function isTimeZone(name: string): boolean {
  try {
    formatterFor(name);
    return true;
  } catch {
    return false;
  }
}

/** A zone's offset from UTC and its abbreviation (`EST`) at some minute. */
interface ZoneAt {
  minute: number;
  offsetMinutes: number;
  name: string;
}

/**
 * Each zone's offset and name at the last minute asked for. They change only at a zone's transitions,
 * which fall on whole minutes, so Intl (formatToParts: a quarter of a millisecond a call, and every
 * tool return prints a time) runs once a minute per zone; the fields come from the shifted instant.
 */
const zonesAt = new Map<string, ZoneAt>();

function zoneAt(date: Date, timeZone: string): ZoneAt {
  const minute = Math.floor(date.getTime() / 60_000);
  const cached = zonesAt.get(timeZone);
  if (cached?.minute === minute) return cached;
  const parts = Object.fromEntries(
    formatterFor(timeZone)
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  const zone = { minute, offsetMinutes: zoneOffsetMinutes(date, parts), name: parts.timeZoneName };
  zonesAt.set(timeZone, zone);
  return zone;
}

/** The wall clock of `date` in a zone (as the UTC fields of a shifted Date), and the zone's offset then. */
function inZone(date: Date, timeZone: string) {
  const { offsetMinutes, name } = zoneAt(date, timeZone);
  const wall = new Date(date.getTime() + offsetMinutes * 60_000);
  const abs = Math.abs(offsetMinutes);
  const [hours, minutes] = [Math.floor(abs / 60), abs % 60].map(twoDigits);
  /** The offset as `+hhmm`, or `+hh:mm` with `separator`. */
  const offset = (separator = '') => `${offsetMinutes < 0 ? '-' : '+'}${hours}${separator}${minutes}`;
  return { wall, name, offsetMinutes, offset };
}

const twoDigits = (n: number) => String(n).padStart(2, '0');

/** Python's `strftime("%Y-%m-%d %I:%M:%S %p %Z%z")` in a timezone, as Letta prints times to the model. */
export function formatLettaTime(date: Date, timeZone = 'UTC'): string {
  const { wall, name, offset } = inZone(date, timeZone);
  const zone = timeZone === 'UTC' ? 'UTC' : name;
  const hour = wall.getUTCHours();
  const day = `${wall.getUTCFullYear()}-${twoDigits(wall.getUTCMonth() + 1)}-${twoDigits(wall.getUTCDate())}`;
  const time = [hour % 12 || 12, wall.getUTCMinutes(), wall.getUTCSeconds()].map(twoDigits).join(':');
  return `${day} ${time} ${hour < 12 ? 'AM' : 'PM'} ${zone}${offset()}`;
}

/** The zone's offset from UTC at `date`: its wall clock, read back as if it were UTC, minus the instant. */
function zoneOffsetMinutes(date: Date, parts: Record<string, string>): number {
  const hour = (Number(parts.hour) % 12) + (parts.dayPeriod === 'PM' ? 12 : 0);
  const wall = Date.UTC(
    Number(parts.year),
    Number(parts.month) - 1,
    Number(parts.day),
    hour,
    Number(parts.minute),
    Number(parts.second),
  );
  return Math.round((wall - Math.floor(date.getTime() / 1000) * 1000) / 60_000);
}

/** Letta's message `date`: ISO 8601 to the second with an explicit offset, e.g. 2026-01-02T03:04:05+00:00. */
export const lettaDate = (date: Date) => date.toISOString().replace(/\.\d{3}Z$/, '+00:00');

/** Python's `isoformat()` of the instant in a zone, e.g. 2026-01-02T04:04:05.123000+01:00. */
export function isoInZone(date: Date, timeZone = 'UTC'): string {
  const { wall, offset } = inZone(date, timeZone);
  const local = wall.toISOString().slice(0, -1);
  return `${local}000${offset(':')}`;
}
