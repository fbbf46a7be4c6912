// The model picker's items and the usage line, from what the server answers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pickItems, usageText } from '../src/modelChoices';

test('the picker offers what the API listed, the model in use picked', () => {
  const items = pickItems({
    current: { provider: 'openai', model: 'qwen3-coder' },
    choices: [
      { provider: 'anthropic', model: 'claude-sonnet-4-5', configured: false },
      { provider: 'openai', model: 'gpt-5', configured: true },
      { provider: 'openai', model: 'qwen3-coder', configured: true },
    ],
    listedBy: { provider: 'openai', source: 'api', note: null },
  });
  assert.deepEqual(
    items.map((i) => i.label),
    ['anthropic · claude-sonnet-4-5', 'openai · gpt-5', 'openai · qwen3-coder', 'Back to the settings'],
  );
  assert.equal(items[0].description, 'not configured (no key or base URL)');
  assert.deepEqual(items.filter((i) => i.picked).map((i) => i.label), ['openai · qwen3-coder']);
  assert.deepEqual(items[2].pick, { provider: 'openai', model: 'qwen3-coder' });
});

test('a refused listing says why the list is the built-in one', () => {
  const note = 'could not list the models (openai: 401 Unauthorized); these are the built-in suggestions';
  const items = pickItems({ choices: [{ provider: 'openai', model: 'gpt-4.1', configured: true }], listedBy: { source: 'built-in', note } });
  const said = items.find((i) => i.detail === note);
  assert.ok(said, JSON.stringify(items));
  assert.equal(said.pick, undefined, 'the note is not a choice');
});

test('reasoning tokens show only when the API counted some', () => {
  assert.equal(usageText({ input_tokens: 10, output_tokens: 50, reasoning_tokens: 40 }), '10 in · 50 out (40 reasoning) tokens');
  assert.equal(usageText({ input_tokens: 10, output_tokens: 5 }), '10 in · 5 out tokens');
  assert.equal(usageText({}), '0 in · 0 out tokens');
});
