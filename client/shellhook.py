"""The shell prompt hook: the snippet `nexus hook install` sources from ~/.bashrc or ~/.zshrc.

Why plain shell: a Python process costs ~45 ms to start (docs/field-notes.md, hooks), which every prompt would pay. The hook
instead appends one line per command to a spool file with a single `printf >>` (one `write` on an O_APPEND file,
so concurrent shells never interleave) and the daemon ingests the spool whenever it runs: nothing is lost while
it is down. The daemon should rotate the spool by renaming it before reading it; a writer that appends later
simply creates a fresh file.

Spool line (version 1), tab-separated, `\\n`-terminated:
    N1 <TAB> shell <TAB> start <TAB> end <TAB> exit <TAB> cwd <TAB> command
`start`/`end` are epoch seconds as the shell prints them (`1700000000.123456`, a `,` decimal mark is accepted,
whole seconds when the shell has no `$EPOCHREALTIME`). In `cwd` and `command`, backslash, newline, tab and CR are
escaped as `\\\\`, `\\n`, `\\t`, `\\r` in pure shell (no fork), so a multi-line command cannot break a line; the
command is cut at 4,000 characters so the line stays one small write.

What the hook records and why:
- bash >= 4.4: `PS0` (expanded once after a line is read, before it runs; an arithmetic expansion inside it sets
  the start time in the current shell without a subshell) plus a function *prepended* to `PROMPT_COMMAND` that
  reads `$?` first. The command text comes from `history 1` (one subshell, ~1 ms), so it is the full line as
  typed; a line that did not enter history (a leading space with `HISTCONTROL=ignorespace`, an ignored
  duplicate, history off) is *not* recorded: the user asked for it not to be kept.
  Older bash: a chained `DEBUG` trap arms the start time instead of PS0 (same text rule).
- zsh: `preexec`/`precmd` via `add-zsh-hook` (our precmd runs first so it sees the command's `$?`), `$1` of
  preexec as the text, skipped when `histignorespace` is set and the line starts with a space.
- Both: `$EPOCHREALTIME` when available, else whole seconds without a fork; existing PROMPT_COMMAND, PS0, traps
  and hook arrays are preserved; `$?` is restored; nothing is printed; errors are discarded; sourcing twice
  only updates the spool path. The caller creates the spool's directory (mode 0700).

The line format is the reader's contract: `nexusd/history/shell.py` (`SPOOL_VERSION`, `parse_spool`).
"""

from __future__ import annotations


def _sh_quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


_COMMON = r"""
__nexus_esc() {
  __nexus_e=${1//\\/\\\\}
  __nexus_e=${__nexus_e//$'\n'/\\n}
  __nexus_e=${__nexus_e//$'\t'/\\t}
  __nexus_e=${__nexus_e//$'\r'/\\r}
}
__nexus_write() {  # shell start end exit cwd cmd
  local __nexus_c __nexus_d
  __nexus_esc "${6:0:4000}"; __nexus_c=$__nexus_e
  __nexus_esc "$5"; __nexus_d=$__nexus_e
  { printf 'N1\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$__nexus_d" "$__nexus_c" >>"$__nexus_spool"; } 2>/dev/null
  return 0
}
"""

_BASH = r"""
# NEXUS shell hook (bash): records each command with exit code, cwd and duration. Safe to source twice.
if [ -n "${BASH_VERSION-}" ]; then
__nexus_spool=@SPOOL@
if [ -z "${__nexus_hook_loaded-}" ]; then
__nexus_hook_loaded=1
__nexus_armed=
__nexus_t0=0
__nexus_empty=
@COMMON@
__nexus_now() {  # sets __nexus_now_v to epoch seconds, as precise as the shell allows, without a fork
  if [ -n "${EPOCHREALTIME-}" ]; then __nexus_now_v=$EPOCHREALTIME
  else printf -v __nexus_now_v '%(%s)T' -1 2>/dev/null || __nexus_now_v=$SECONDS; fi
}
__nexus_histno() {  # sets __nexus_hn (history number of the last entry) and __nexus_ht (its text)
  local __nexus_h
  __nexus_h=$(HISTTIMEFORMAT= builtin history 1 2>/dev/null)
  __nexus_h=${__nexus_h#"${__nexus_h%%[![:space:]]*}"}
  __nexus_hn=${__nexus_h%%[!0-9]*}
  __nexus_ht=${__nexus_h:${#__nexus_hn}+2}
}
__nexus_precmd() {
  local __nexus_s=$?
  if [ -n "${__nexus_armed-}" ]; then
    __nexus_armed=
    local __nexus_prev=${__nexus_hn-} __nexus_now_v __nexus_start
    __nexus_now
    __nexus_start=$__nexus_t0
    if [ -n "${EPOCHREALTIME-}" ] && [ "${#__nexus_start}" -gt 6 ]; then
      __nexus_start="${__nexus_start:0:${#__nexus_start}-6}.${__nexus_start:${#__nexus_start}-6}"
    elif [ -z "${EPOCHREALTIME-}" ]; then
      __nexus_start=$(( __nexus_now_v - (SECONDS - __nexus_t0) ))
    fi
    __nexus_histno
    if [ -n "$__nexus_hn" ] && [ "$__nexus_hn" != "$__nexus_prev" ]; then
      __nexus_write bash "$__nexus_start" "$__nexus_now_v" "$__nexus_s" "$PWD" "$__nexus_ht"
    fi
  fi
  return $__nexus_s
}
__nexus_histno
if [ "${BASH_VERSINFO[0]:-0}" -gt 4 ] || { [ "${BASH_VERSINFO[0]:-0}" -eq 4 ] && [ "${BASH_VERSINFO[1]:-0}" -ge 4 ]; }; then
  if [ -n "${EPOCHREALTIME-}" ]; then
    PS0='${__nexus_empty:0:$((__nexus_t0=${EPOCHREALTIME//[.,]/}, __nexus_armed=1, 0))}'"${PS0-}"
  else
    PS0='${__nexus_empty:0:$((__nexus_t0=SECONDS, __nexus_armed=1, 0))}'"${PS0-}"
  fi
else
  __nexus_debug() {
    if [ -n "${__nexus_ready-}" ] && [ -z "${COMP_LINE-}" ]; then __nexus_ready=; __nexus_armed=1; __nexus_t0=$SECONDS; fi
  }
  __nexus_prev_debug=$(trap -p DEBUG)
  if [ -n "$__nexus_prev_debug" ]; then eval "set -- $__nexus_prev_debug"; __nexus_prev_debug=$3; set --; fi
  trap '__nexus_debug; eval "${__nexus_prev_debug-}"' DEBUG
  __nexus_arm() { local __nexus_s=$?; __nexus_ready=1; return $__nexus_s; }
  PROMPT_COMMAND="${PROMPT_COMMAND:+$PROMPT_COMMAND
}__nexus_arm"
fi
if [[ "$(declare -p PROMPT_COMMAND 2>/dev/null)" == "declare -a"* ]]; then
  PROMPT_COMMAND=(__nexus_precmd "${PROMPT_COMMAND[@]}")
else
  PROMPT_COMMAND="__nexus_precmd${PROMPT_COMMAND:+
$PROMPT_COMMAND}"
fi
fi
fi
"""

_ZSH = r"""
# NEXUS shell hook (zsh): records each command with exit code, cwd and duration. Safe to source twice.
if [ -n "${ZSH_VERSION-}" ]; then
__nexus_spool=@SPOOL@
if [ -z "${__nexus_hook_loaded-}" ]; then
__nexus_hook_loaded=1
__nexus_armed=
zmodload zsh/datetime 2>/dev/null
@COMMON@
__nexus_now() {
  if [ -n "${EPOCHREALTIME-}" ]; then __nexus_now_v=$EPOCHREALTIME
  elif [ -n "${EPOCHSECONDS-}" ]; then __nexus_now_v=$EPOCHSECONDS
  else __nexus_now_v=$(date +%s); fi
}
__nexus_preexec() {
  if [[ -o histignorespace && "$1" == ' '* ]]; then __nexus_armed=; return 0; fi
  __nexus_cmd=$1
  local __nexus_now_v; __nexus_now; __nexus_t0=$__nexus_now_v
  __nexus_armed=1
}
__nexus_precmd() {
  local __nexus_s=$?
  if [ -n "${__nexus_armed-}" ]; then
    __nexus_armed=
    local __nexus_now_v; __nexus_now
    __nexus_write zsh "$__nexus_t0" "$__nexus_now_v" "$__nexus_s" "$PWD" "$__nexus_cmd"
  fi
  return $__nexus_s
}
autoload -Uz add-zsh-hook 2>/dev/null
preexec_functions=(${preexec_functions:#__nexus_preexec} __nexus_preexec)
precmd_functions=(__nexus_precmd ${precmd_functions:#__nexus_precmd})
fi
fi
"""


def hook_script(shell: str, spool_path: str) -> str:
    """The snippet to source from ~/.bashrc (shell="bash") or ~/.zshrc (shell="zsh")."""
    if shell == "bash":
        template = _BASH
    elif shell == "zsh":
        template = _ZSH
    else:
        raise ValueError(f"unsupported shell: {shell!r} (bash or zsh)")
    return (
        template.replace("@COMMON@", _COMMON.strip("\n"))
        .replace("@SPOOL@", _sh_quote(spool_path))
        .lstrip("\n")
    )
