// The params of the server's `bareagent/event` notification, generated
// from editors/protocol/bareagent-event.schema.json by `npm run generate:events`: do not edit.

/**
 * The params of one `bareagent/event` notification.
 */
export type EditorEvent =
  | {
      type: 'turn_started';
      turn: number;
      session: string;
      prompt: string;
    }
  | {
      type: 'turn_finished';
      turn: number;
      session: string;
      text: string;
      usage: Usage;
    }
  | {
      type: 'turn_failed';
      turn: number;
      session: string;
      message: string;
    }
  | {
      type: 'approval_requested';
      id: number;
      turn: number;
      tool: string;
      summary: string;
      reason: string;
      /**
       * What "allow always" would save.
       */
      rule: string;
      /**
       * The whole unified diff of an edit, else `null`.
       */
      diff: string | null;
      /**
       * An edit's file, workspace-relative, else `null`.
       */
      path: string | null;
      /**
       * An edit's file by the URI the editor opened it with (else the
       * file's own), else `null`.
       */
      uri: string | null;
      /**
       * An edit's file's whole text after the change, else `null`.
       */
      proposed: string | null;
    }
  | {
      type: 'approval_resolved';
      id: number;
    }
  | {
      type: 'mcp_server';
      server: string;
      /**
       * `failed`.
       */
      state: string;
      message: string;
    }
  | {
      type: 'rewound';
      session: string;
      /**
       * Paths put back as they were before the turn.
       */
      restored: string[];
      /**
       * Files left as they are, with why.
       */
      refused: Refused[];
    }
  | (
      | {
          type: 'text_delta';
          text: string;
          /**
           * Absent for a compaction asked for between turns (`bareagent.compact`).
           */
          turn?: number;
          session: string;
        }
      | {
          type: 'thinking_delta';
          text: string;
          /**
           * Absent for a compaction asked for between turns (`bareagent.compact`).
           */
          turn?: number;
          session: string;
        }
      | {
          type: 'tool_call';
          id: string;
          name: string;
          input: unknown;
          /**
           * Absent for a compaction asked for between turns (`bareagent.compact`).
           */
          turn?: number;
          session: string;
        }
      | {
          type: 'tool_result';
          id: string;
          name: string;
          content: string;
          is_error: boolean;
          /**
           * Absent for a compaction asked for between turns (`bareagent.compact`).
           */
          turn?: number;
          session: string;
        }
      | {
          type: 'usage';
          call: Usage;
          total: Usage;
          /**
           * The call's cost in USD; `None` when the model has no price.
           */
          call_cost_usd: number | null;
          /**
           * USD; `None` when some call's model has no price (unknown, never 0).
           */
          cost_usd: number | null;
          /**
           * The last call's prompt (input, cache write and cache read) and
           * answer: what the next call starts from.
           */
          context_tokens: number;
          /**
           * The model's context window, if known.
           */
          context_window: number | null;
          /**
           * `context_tokens` as a percentage of the window, if known.
           */
          context_percent: number | null;
          /**
           * Absent for a compaction asked for between turns (`bareagent.compact`).
           */
          turn?: number;
          session: string;
          session_total: Usage;
          /**
           * USD; `null` when some call's model has no price.
           */
          session_cost_usd: number | null;
        }
      | {
          type: 'stream_fallback';
          reason: string;
          /**
           * Absent for a compaction asked for between turns (`bareagent.compact`).
           */
          turn?: number;
          session: string;
        }
      | {
          type: 'user_message';
          text: string;
          /**
           * Absent for a compaction asked for between turns (`bareagent.compact`).
           */
          turn?: number;
          session: string;
        }
      | {
          type: 'file_changed';
          path: string;
          diff: string;
          asked: boolean;
          /**
           * Absent for a compaction asked for between turns (`bareagent.compact`).
           */
          turn?: number;
          session: string;
        }
      | {
          type: 'file_touched';
          path: string;
          /**
           * The tool's name, as the model called it.
           */
          tool: string;
          how: Touch;
          /**
           * Absent for a compaction asked for between turns (`bareagent.compact`).
           */
          turn?: number;
          session: string;
        }
      | {
          type: 'todos';
          todos: TodoItem[];
          /**
           * Absent for a compaction asked for between turns (`bareagent.compact`).
           */
          turn?: number;
          session: string;
        }
      | {
          type: 'compacted';
          before_tokens: number;
          after_tokens: number;
          how: CompactHow;
          /**
           * Absent for a compaction asked for between turns (`bareagent.compact`).
           */
          turn?: number;
          session: string;
        }
      | {
          type: 'compaction_failed';
          reason: string;
          /**
           * Absent for a compaction asked for between turns (`bareagent.compact`).
           */
          turn?: number;
          session: string;
        }
      | {
          type: 'notice';
          text: string;
          /**
           * Absent for a compaction asked for between turns (`bareagent.compact`).
           */
          turn?: number;
          session: string;
        }
    );
/**
 * How a file changed between two looks.
 */
export type Touch = 'created' | 'modified' | 'deleted';
/**
 * One step of the model's plan (the `todo_write` tool's input, and what
 * the user sees).
 */
export type TodoStatus = 'pending' | 'in_progress' | 'completed';
/**
 * How a compaction made room: old tool results shrunk to one-line stubs,
 * or the older part of the conversation summarised by the model.
 */
export type CompactHow = 'tool_results' | 'summary';

/**
 * Tokens one model call (or a turn, summed) used, as the APIs report them.
 */
export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  /**
   * Of `output_tokens`, those the model spent thinking, where the API
   * says (OpenAI's `reasoning_tokens`); priced as output, shown apart.
   */
  reasoning_tokens?: number;
}
/**
 * A file a rewind left as it is, and why.
 */
export interface Refused {
  path: string;
  reason: string;
}
export interface TodoItem {
  content: string;
  status: TodoStatus;
}
