import fc from 'fast-check'
import { TEXT_PATTERN } from '../../schemas/common.js'
import type { JsonSchema } from './fuzz-openapi.js'

/** A JSON token written as it is: numbers JSON.stringify never produces (`1e400`, `-0.0`, `1E+2`). */
export class RawJson {
  constructor (readonly text: string) {}
}

/** JSON text of a value that may hold RawJson tokens. */
export function toJson (value: unknown): string {
  if (value instanceof RawJson) return value.text
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}:${toJson(item)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

const NASTY_TEXT = [
  '', ' ', '\u0000', 'a\u0000b', '\ud800', '\udfff', 'a\udc00b\ud83d', '\u{1F600}\u{10FFFF}', '\u202eevil\u202c', '\u200f\u0627',
  '\u200b', 'e\u0301\u0301\u0301', '\ufeff', '\r\n', '\t', '%00', '%ZZ', "' OR 1=1 --", '"; DROP TABLE users; --', '<script>',
  '../../etc/passwd', '{{7*7}}', '%s%n', 'null', 'true', '1e400', 'NaN', 'Infinity', '-1', '0x10', '__proto__',
  'constructor', '\\', '"', '\u0085\u2028\u2029'
]

// Code points a text field should survive: controls, bidi marks, noncharacters, astral planes.
const oddCodePoints = [
  fc.integer({ min: 1, max: 0x1f }),
  fc.integer({ min: 0x7f, max: 0x9f }),
  fc.constantFrom(0x200e, 0x200f, 0x202a, 0x202e, 0x2066, 0xfeff, 0xfffe, 0xffff),
  fc.integer({ min: 0x10000, max: 0x10ffff })
]
const storableUnit = fc.oneof(...oddCodePoints).map((code) => String.fromCodePoint(code))
// ...and what it cannot store: NUL and unpaired surrogates.
const oddUnit = fc.oneof(...oddCodePoints, fc.constant(0), fc.integer({ min: 0xd800, max: 0xdfff })).map((code) => String.fromCodePoint(code))

export const text = fc.oneof(
  fc.constantFrom(...NASTY_TEXT),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: oddUnit, maxLength: 20 })
)

/** `length` characters of one kind: ASCII, two-byte, astral (two UTF-16 units), NUL or an unpaired surrogate. */
export const repeated = (length: number) =>
  fc.constantFrom('x', 'é', '\u{1F600}', '\u0000', '\ud800').map((char) => char.repeat(Math.max(0, length)))

const RAW_NUMBERS = ['1e400', '-1e400', '1E+2', '-0.0', '1.0', '0.1e1', '123456789012345678901234567890', '4.9e-325']

export const number = fc.oneof(
  fc.constantFrom(-1, 0, -0, 0.5, 1.5, -1.5, 2 ** 31 - 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53 + 2, Number.MAX_VALUE, Number.MIN_VALUE),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(...RAW_NUMBERS).map((token) => new RawJson(token))
)

/** Numbers as a query string or a path segment spells them, and what a careless parser reads as one. */
export const numericText = fc.oneof(
  number.map((value) => value instanceof RawJson ? value.text : String(value)),
  fc.constantFrom('NaN', 'Infinity', '-Infinity', '0x10', '0b1', '0o7', '1_000', ' 1', '1 ', '+1', '01', '1.', '.5', '1e', '--1', '1,5')
)

export const { value: anyValue } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    number,
    text,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(text, tie('value'), { maxKeys: 4 })
  )
}))

const typesOf = (schema: JsonSchema) => [schema.type ?? []].flat()

const STORABLE = new RegExp(TEXT_PATTERN, 'u')
const storable = (value: string) => STORABLE.test(value)

function validString (schema: JsonSchema): fc.Arbitrary<string> {
  if (schema.format === 'email') {
    return fc.tuple(fc.stringMatching(/^[a-z0-9][a-z0-9.+_-]{0,15}$/), fc.nat()).map(([local, n]) => `${local}${n}@fuzz.example.com`)
  }
  const minLength = schema.minLength ?? 0
  const maxLength = schema.maxLength ?? 64
  if (schema.pattern && schema.pattern !== TEXT_PATTERN) {
    return fc.stringMatching(new RegExp(schema.pattern)).filter((value) => value.length >= minLength && value.length <= maxLength)
  }
  // Valid, not tame: astral characters, controls and bidi marks are text too.
  const unit = fc.oneof(
    { weight: 4, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }) },
    { weight: 2, arbitrary: storableUnit },
    { weight: 1, arbitrary: fc.constantFrom(' ', 'é', '\u{1F600}', '\u202e') }
  )
  return fc.oneof(
    { weight: 4, arbitrary: fc.string({ unit, minLength, maxLength: Math.min(maxLength, Math.max(minLength, 40)) }) },
    // Exactly at the limit, counted in code points as the validator and PostgreSQL both count.
    { weight: 1, arbitrary: fc.constantFrom('x', 'é', '\u{1F600}').map((char) => char.repeat(maxLength)) }
  ).filter(storable)
}

/**
 * A string the schema would take but for what PostgreSQL cannot store: a NUL or an unpaired
 * surrogate, at the start, the end or anywhere. (A trail surrogate after a non-ASCII letter is
 * what PGlite mis-measures; at the end of a text that corrupts the query into a 500.)
 */
const unstorable = (schema: JsonSchema) =>
  fc.tuple(
    validString({ ...schema, format: undefined, pattern: undefined }),
    fc.oneof(fc.constantFrom(0, Infinity), fc.nat()),
    fc.constantFrom('\u0000', '\ud800', '\udc00', 'é\udc00')
  ).map(([value, at, bad]) => {
    const kept = value.slice(0, Math.max(0, (schema.maxLength ?? 64) - bad.length))
    const i = Math.min(at, kept.length)
    return `${kept.slice(0, i)}${bad}${kept.slice(i)}`
  })

/** Values that satisfy the schema, so that well-formed requests reach the handlers. */
export function valid (schema: JsonSchema): fc.Arbitrary<unknown> {
  if (schema.enum) return fc.constantFrom(...schema.enum)
  // One of several shapes, e.g. a create's one row or array of rows.
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map(valid))
  const types = typesOf(schema)
  if (types.length > 1) return fc.oneof(...types.map((type) => valid({ ...schema, type })))
  switch (types[0]) {
    case 'null': return fc.constant(null)
    case 'boolean': return fc.boolean()
    case 'string': return validString(schema)
    case 'integer': return fc.integer({ min: schema.minimum ?? -(2 ** 31), max: schema.maximum ?? 2 ** 31 - 1 })
    case 'number': return fc.double({ min: schema.minimum ?? -1e12, max: schema.maximum ?? 1e12, noNaN: true, noDefaultInfinity: true })
    case 'array': return fc.array(valid(schema.items ?? {}), { maxLength: Math.min(schema.maxItems ?? 5, 5) })
    case 'object': return validObject(schema)
    default: return anyValue
  }
}

function validObject (schema: JsonSchema): fc.Arbitrary<Record<string, unknown>> {
  const shape = Object.fromEntries(Object.entries(schema.properties ?? {}).map(([key, property]) => [key, valid(property)]))
  return fc.record(shape, { requiredKeys: schema.required ?? [] }).map((value) => {
    // A property whose companions are absent is left out, so `dependentRequired` holds too.
    const result: Record<string, unknown> = { ...value }
    for (const [key, needs] of Object.entries(schema.dependentRequired ?? {})) {
      if (needs.some((need) => !(need in result))) delete result[key]
    }
    return result
  })
}

/** Values just outside the schema: past each bound, of another type, or nothing like it. */
export function invalid (schema: JsonSchema): fc.Arbitrary<unknown> {
  const near: Array<fc.WeightedArbitrary<unknown>> = [{ weight: 1, arbitrary: anyValue }, { weight: 1, arbitrary: fc.constant(null) }]
  const add = (weight: number, ...arbitraries: Array<fc.Arbitrary<unknown>>) => near.push(...arbitraries.map((arbitrary) => ({ weight, arbitrary })))
  const types = typesOf(schema)
  if (types.includes('string')) {
    add(4, unstorable(schema))
    add(1, repeated((schema.maxLength ?? 4096) + 1), repeated((schema.minLength ?? 1) - 1), numericText, text)
  }
  if (types.includes('integer') || types.includes('number')) {
    const { minimum = -(2 ** 31), maximum = 2 ** 31 - 1 } = schema
    add(1, fc.constantFrom(minimum - 1, maximum + 1, minimum - 0.5, minimum + 0.5), numericText, number)
  }
  if (types.includes('object')) add(1, brokenObject(schema))
  if (types.includes('array')) add(1, fc.array(anyValue, { minLength: (schema.maxItems ?? 32) + 1, maxLength: (schema.maxItems ?? 32) + 2 }))
  return fc.oneof(...near)
}

// Fields a client might try to set: server-assigned or privileged, and prototype pollution.
const SMUGGLED = ['id', 'created_at', 'is_superuser', 'is_active', 'scopes', 'hashed_password', '__proto__', 'constructor', '']

/** A valid object with one thing wrong: a field missing, one field invalid, or fields added. */
export function brokenObject (schema: JsonSchema): fc.Arbitrary<unknown> {
  const keys = Object.keys(schema.properties ?? {})
  const base = validObject(schema)
  const variants: Array<fc.WeightedArbitrary<unknown>> = [{
    weight: 1,
    arbitrary: fc.tuple(base, fc.dictionary(fc.oneof(fc.constantFrom(...SMUGGLED), text), anyValue, { minKeys: 1, maxKeys: 4 }))
      .map(([value, extra]) => ({ ...extra, ...value, ...extra }))
  }]
  if ((schema.required ?? []).length > 0) {
    variants.push({
      weight: 1,
      arbitrary: fc.tuple(base, fc.constantFrom(...schema.required ?? [])).map(([value, key]) => {
        const { [key]: _dropped, ...rest } = value
        return rest
      })
    })
  }
  if (keys.length > 0) {
    variants.push({
      weight: 3,
      arbitrary: fc.tuple(base, fc.constantFrom(...keys)).chain(([value, key]) =>
        invalid(schema.properties?.[key] ?? {}).map((bad) => ({ ...value, [key]: bad })))
    })
  }
  return fc.oneof(...variants)
}
