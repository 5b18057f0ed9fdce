import type { FormatDefinition, FuncKeywordDefinition, SchemaValidateFunction } from 'ajv'
import { fullFormats } from 'ajv-formats/dist/formats.js'

// Four-digit years of PostgreSQL's calendar (no year 0): outside them a value is a 422, not a driver error or a wrong row.
const FIRST_INSTANT = Date.parse('0001-01-01T00:00:00.000Z')
const LAST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z')

/** The largest UTC offset PostgreSQL takes, in hours (15:59). */
const MAX_OFFSET_HOURS = 15

// RFC 3339 as ajv-formats reads it, narrowed to what PostgreSQL takes: T or one space before the time, at most nine decimals.
const DATE_TIME = /^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d\d)(?::?(\d\d))?)$/

// Date.UTC reads years 0 to 99 as 1900 to 1999: the instant is computed 400 years (one whole Gregorian cycle) later.
const CYCLE_MS = 146_097 * 86_400_000

/** The instant PostgreSQL stores for a date-time, in ms: its offset applied, a leap second carried, rounded to milliseconds as timestamp(3) rounds. */
function storedInstant (text: string): number | undefined {
  const [, year, month, day, hour, minute, second, fraction = '', sign, offsetHours = '0', offsetMinutes = '0'] = DATE_TIME.exec(text) ?? []
  if (year === undefined || Number(offsetHours) > MAX_OFFSET_HOURS) return undefined
  const ms = Math.floor((Math.round(Number(`0.${fraction}`) * 1e6) + 500) / 1000)
  const offset = (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes))
  return Date.UTC(Number(year) + 400, Number(month) - 1, Number(day), Number(hour), Number(minute) - offset, Number(second), ms) - CYCLE_MS
}

const validDate = fullFormats.date as FormatDefinition<string>
const validDateTime = fullFormats['date-time'] as FormatDefinition<string>

export const storableFormats: Record<'date' | 'date-time', FormatDefinition<string>> = {
  date: { type: 'string', validate: (text) => !text.startsWith('0000') && (validDate.validate as (text: string) => boolean)(text) },
  'date-time': {
    type: 'string',
    validate: (text) => {
      if (text.startsWith('0000') || !(validDateTime.validate as (text: string) => boolean)(text)) return false
      const instant = storedInstant(text)
      return instant !== undefined && instant >= FIRST_INSTANT && instant <= LAST_INSTANT
    }
  }
}

export const FORMAT_MESSAGES: Record<string, string> = {
  date: 'must match format "date": YYYY-MM-DD, from 0001-01-01 to 9999-12-31',
  'date-time': 'must match format "date-time": RFC 3339 with Z or an offset of at most ±15:59 and at most 9 decimals, ' +
    'from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z'
}

/** How deep an object field may nest, counting the field's own object as one level. */
export const MAX_OBJECT_DEPTH = 32

const UNPAIRED_SURROGATE = /[\ud800-\udfff]/u

/** Why PostgreSQL cannot store this text, if it cannot: a NUL, or an unpaired surrogate, which has no UTF-8 form. */
export function unstorableText (text: string): string | undefined {
  if (text.includes('\u0000')) return 'NUL characters'
  return UNPAIRED_SURROGATE.test(text) ? 'unpaired surrogates' : undefined
}

interface Unstorable { path: string, message: string }

const pointerPart = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1')

function unstorable (value: unknown, maxDepth: number, path = '', depth = 1): Unstorable | undefined {
  if (typeof value === 'string') {
    const text = unstorableText(value)
    return text === undefined ? undefined : { path, message: `must not contain ${text}` }
  }
  if (typeof value !== 'object' || value === null) return undefined
  // The field is named, not the level: a path 10,000 levels long would be the whole answer.
  if (depth > maxDepth) return { path: '', message: `must be at most ${maxDepth} levels deep` }
  for (const [key, item] of Object.entries(value)) {
    const text = Array.isArray(value) ? undefined : unstorableText(key)
    if (text !== undefined) return { path, message: `must not have keys with ${text}` }
    const found = unstorable(item, maxDepth, `${path}/${pointerPart(key)}`, depth + 1)
    if (found) return found
  }
  return undefined
}

const storableJson: SchemaValidateFunction = (schema: { maxDepth: number }, data: unknown, _parent, context) => {
  const found = unstorable(data, schema.maxDepth)
  storableJson.errors = found && [{ keyword: 'x-jsonb', instancePath: `${context!.instancePath}${found.path}`, params: {}, message: found.message }]
  return found === undefined
}

/** The keyword of an object field's value: `{ "x-jsonb": { "maxDepth": 32 } }`, what PostgreSQL's jsonb stores, at most that deep. */
export const jsonbKeyword: FuncKeywordDefinition = { keyword: 'x-jsonb', schemaType: 'object', errors: true, validate: storableJson }
