import type { Test } from 'tap'

// What the app's answers look like, for assertions on inject and real HTTP answers alike.

/** The content type of every error answer: a problem document (RFC 9457). */
export const PROBLEM_TYPE = 'application/problem+json; charset=utf-8'

/** The content type of every JSON answer that is not a problem document. */
export const JSON_TYPE = 'application/json; charset=utf-8'

/** The 422 problem document for these errors, as the root error handler writes it. */
export function validationProblem (...errors: Array<[path: string, message: string]>) {
  return {
    type: 'about:blank',
    title: 'Unprocessable Entity',
    status: 422,
    detail: errors.map(([path, message]) => `${path} ${message}`).join('; '),
    code: 'VALIDATION_FAILED',
    errors: errors.map(([path, message]) => ({ path, message }))
  }
}

interface Answer { statusCode: number, headers: Record<string, unknown>, json (): any }

/** The answer is a problem document of this status and code, with a detail. */
export function assertProblem (t: Test, res: Answer, status: number, code: string, message = code) {
  t.equal(res.statusCode, status, message)
  t.equal(res.headers['content-type'], PROBLEM_TYPE, `${message}: a problem document`)
  const body = res.json()
  t.equal(body.code, code, message)
  t.equal(typeof body.detail === 'string' && body.detail.length > 0, true, `${message}: a detail`)
}
