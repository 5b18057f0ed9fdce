import { defineProblems } from '../../http/problem-error.js'
import { inputError } from '../../http/problems.js'

export const catalogProblems = defineProblems({
  ItemNotFound: { status: 404, code: 'CATALOG_ITEM_NOT_FOUND', message: 'item %s not found' },
  InvalidCatalogOptions: { code: 'CATALOG_INVALID_OPTIONS', message: 'catalog plugin: %s' },
  // Answered as VALIDATION_FAILED, like a schema's failure, with errors[] naming the part.
  InvalidInput: { status: 422, code: 'CATALOG_INVALID_INPUT', message: '/%s%s %s' }
})

export const { ItemNotFound, InvalidCatalogOptions } = catalogProblems

export const invalidInput = inputError(catalogProblems.InvalidInput)
