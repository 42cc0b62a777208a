import { z } from 'zod';

// The very patterns zod checks `z.uuid()` and `z.iso.datetime({ offset: true })` with, so a
// string inferred as a uuid or a date-time always passes the schema generated for it.
const UUID = z.regexes.uuid();
const DATE_TIME = z.regexes.datetime({ offset: true, local: false, precision: null });

/** Whether a string is a uuid (RFC 9562: a version digit 1 to 8 and the variant bits; or the nil or max uuid). */
export const isUuid = (value: string): boolean => UUID.test(value);

/** Whether a string is an RFC 3339 `date-time`: seconds required, an optional fraction, `Z` or a `±hh:mm` offset. */
export const isDateTime = (value: string): boolean => DATE_TIME.test(value);
