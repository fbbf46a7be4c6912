// The `bareagent/event` contract, on the extension's side: the fixtures the
// editors' tests share (editors/protocol/events.json) are events the
// server's schema allows, and src/editorEvent.ts (the types the extension's
// event handlers are checked against by `tsc`) is what that schema makes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020';

const read = (path: string) => JSON.parse(readFileSync(path, 'utf8'));
const schema = read('../protocol/bareagent-event.schema.json');
const events: { type: string }[] = read('../protocol/events.json');

// The schema's number formats (Rust's integer and float types) say no more than its `type` and `minimum`.
const ajv = new Ajv2020({ allErrors: true, formats: { uint64: true, double: true } });
const validate = ajv.compile(schema);

test('every fixture is an event the schema allows', () => {
  assert.ok(events.length > 0);
  for (const event of events) {
    assert.ok(validate(event), `${JSON.stringify(event)}: ${ajv.errorsText(validate.errors)}`);
  }
});

test('a field the schema does not name, or one it requires and is missing, is refused', () => {
  const started = events.find((e) => e.type === 'turn_started');
  assert.ok(started);
  assert.equal(validate({ ...started, colour: 'blue' }), false);
  const { prompt, ...withoutPrompt } = started as { prompt?: string };
  assert.equal(typeof prompt, 'string');
  assert.equal(validate(withoutPrompt), false);
});

test('src/editorEvent.ts is what the schema makes (else: npm run generate:events)', () => {
  const check = spawnSync(process.execPath, ['generate-events.mjs', '--check'], { encoding: 'utf8' });
  assert.equal(check.status, 0, check.stderr);
});
