import { defineProblems } from '../../http/problem-error.js'
import { inputError } from '../../http/problems.js'

/** Every code the resource plugin throws; a field's and a table's codes are declared below it, in schemas/ and db/. */
export const resourceProblems = defineProblems({
  // `records 7 not found`: the detail names the resource and the id.
  RecordNotFound: { status: 404, code: 'RESOURCE_NOT_FOUND', message: '%s %s not found' },
  InvalidResourceOptions: { code: 'RESOURCE_INVALID_OPTIONS', message: 'resource plugin: %s' },
  // Answered as VALIDATION_FAILED, like a schema's failure, with errors[] naming the part.
  InvalidInput: { status: 422, code: 'RESOURCE_INVALID_INPUT', message: '/%s%s %s' },
  // Named by its fields, never its values: `Another row of tasks already has this project_id and title`.
  ResourceConflict: { status: 409, code: 'RESOURCE_CONFLICT', message: 'Another row of %s already has this %s' },
  // A `restrict` reference: `projects 7 is still referenced by rows of tasks (project_id)...`.
  ResourceReferenced: { status: 409, code: 'RESOURCE_REFERENCED', message: '%s %s is still referenced by rows of %s: delete those rows, or point them elsewhere, first' },
  // Names the cap passed: `At most 20 event streams may be open at once per account on this server; ...`.
  TooManyStreams: { status: 429, code: 'RESOURCE_TOO_MANY_STREAMS', message: 'At most %s event streams may be open at once per %s on this server; close one first', headers: { 'retry-after': '5' } },
  ResourceNotRegistered: {
    code: 'RESOURCE_NOT_REGISTERED',
    message: 'no resource "%s" is registered on this app: register resourcePlugin with { name: \'%s\' }, awaited, before asking for its table'
  }
})

export const { RecordNotFound, InvalidResourceOptions, ResourceConflict, ResourceReferenced, ResourceNotRegistered, TooManyStreams } = resourceProblems

export const invalidInput = inputError(resourceProblems.InvalidInput)
