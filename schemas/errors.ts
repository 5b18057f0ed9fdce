import { defineProblems } from '../http/problem-error.js'

/** Every code the shared schemas throw: a resource's declared fields, checked when the resource is registered. */
export const schemaProblems = defineProblems({
  // A field outside the supported set, or badly named; the resource plugin adds the resource's name.
  FieldError: { code: 'RESOURCE_INVALID_FIELD', message: '%s' }
})

export const { FieldError } = schemaProblems
