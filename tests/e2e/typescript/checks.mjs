// The drivers' check bookkeeping: one PASS or FAIL line per check, and the closing count
// run.sh reads (`<prefix>: N checks passed, M failed`, exit status 1 on any failure).

export const checks = { passed: 0, failed: 0, prefix: '' };

export function check(name, condition, detail = '') {
  const label = `${checks.prefix}: ${name}`;
  if (condition) {
    checks.passed += 1;
    console.log(`PASS: ${label}`);
  } else {
    checks.failed += 1;
    const why = typeof detail === 'string' ? detail : JSON.stringify(detail);
    console.log(`FAIL: ${label}: ${why}`);
  }
  return condition;
}

export function equal(name, actual, expected) {
  return check(name, JSON.stringify(actual) === JSON.stringify(expected), `expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

/** Prints the count and exits: 0 when every check passed. */
export function finish() {
  console.log(`${checks.prefix}: ${checks.passed} checks passed, ${checks.failed} failed`);
  process.exit(checks.failed === 0 ? 0 : 1);
}
