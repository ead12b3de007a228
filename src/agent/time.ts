/** Python's `strftime("%Y-%m-%d %I:%M:%S %p %Z%z")` in a timezone, as Letta prints times to the model. */
export function formatLettaTime(date: Date, timeZone = 'UTC'): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hour12: true,
      timeZoneName: 'short',
    })
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  const offsetMinutes = zoneOffsetMinutes(date, timeZone);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  const offset = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}${String(abs % 60).padStart(2, '0')}`;
  const zone = timeZone === 'UTC' ? 'UTC' : parts.timeZoneName;
  const hour = parts.hour === '24' ? '12' : parts.hour;
  return `${parts.year}-${parts.month}-${parts.day} ${hour}:${parts.minute}:${parts.second} ${parts.dayPeriod} ${zone}${offset}`;
}

function zoneOffsetMinutes(date: Date, timeZone: string): number {
  const local = new Date(date.toLocaleString('en-US', { timeZone }));
  const utc = new Date(date.toLocaleString('en-US', { timeZone: 'UTC' }));
  return Math.round((local.getTime() - utc.getTime()) / 60_000);
}

/** Letta's message `date`: ISO 8601 to the second with an explicit offset, e.g. 2026-01-02T03:04:05+00:00. */
export const lettaDate = (date: Date) => date.toISOString().replace(/\.\d{3}Z$/, '+00:00');
