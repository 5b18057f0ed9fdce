import type { TObject } from '@sinclair/typebox'
import { readFields, rowSchema, type Field } from '../../schemas/fields.js'
import { RecordCreateSchema, recordSchema } from '../../schemas/record.js'

/** What tells one kind of resource from another, as data: every resource goes through the same routes, schemas and table code. */
export interface ResourcePreset {
  timestamps: boolean
  /** The table's definition is stored, so its fields may change between boots; else the table is checked by its columns. */
  tracked: boolean
  /** `filtered`: filters, sorts, cursors and counts; `pages`: pages by offset, in id order. */
  list: 'filtered' | 'pages'
  /** `replace`: PUT replaces and PATCH changes the fields sent; `change`: PUT changes the fields sent, and there is no PATCH. */
  put: 'replace' | 'change'
  /** The document's word for one row, and the preposition of its create summary: "Create a row of tasks". */
  noun: string
  into: string
  /** The titles of the create and change bodies, when not the resource's name with Create and Patch. */
  bodyTitles?: { create: string, change: string }
  rowSchema (name: string, fields: Field[], owner: boolean): TObject
}

export const FIELDS_PRESET: ResourcePreset = {
  timestamps: true,
  tracked: true,
  list: 'filtered',
  put: 'replace',
  noun: 'row',
  into: 'of',
  rowSchema: (name, fields, owner) => rowSchema(name, fields, { owner })
}

/** The seed's `records` (title and description), as served before resources had fields, on the tables made then. */
export const RECORDS_PRESET: ResourcePreset & { fields: Field[] } = {
  fields: readFields(RecordCreateSchema),
  timestamps: false,
  tracked: false,
  list: 'pages',
  put: 'change',
  noun: 'record',
  into: 'in',
  bodyTitles: { create: 'RecordCreate', change: 'RecordUpdate' },
  rowSchema: (name) => recordSchema(name)
}

/** A resource's fields and preset: the fields it was given, or the `records` preset's without any. */
export const presetOf = (fields: Field[] | undefined): { fields: Field[], preset: ResourcePreset } =>
  fields ? { fields, preset: FIELDS_PRESET } : { fields: RECORDS_PRESET.fields, preset: RECORDS_PRESET }
