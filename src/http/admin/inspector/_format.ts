import { isoTime } from '../../../core/steps/time-or-duration.js';

/** A time as the pages show it: ISO 8601 in UTC, `.000` left off; '' for none. */
export const iso = (ms: number | null | undefined) => isoTime(ms)?.replace('.000Z', 'Z') ?? '';

/** A link's query string from the parameters that have a value: `?status=dead&type=…`, or '' when none has. */
export const query = (params: Record<string, string | undefined>) => {
  const q = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => !!e[1])).toString();
  return q ? `?${q}` : '';
};
