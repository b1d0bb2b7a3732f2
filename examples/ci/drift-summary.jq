# Renders `terraform show -json PLAN` for a drift job (drift.sh):
#
#   jq -r --arg format markdown    -f drift-summary.jq plan.json   # for $GITHUB_STEP_SUMMARY
#   jq -r --arg format annotations -f drift-summary.jq plan.json   # ::error / ::warning lines for the job log
#
# Each resource the plan would change is listed with the attributes that
# differ: what the refresh read (the controller's view) and what the
# configuration wants. Failed check blocks are listed as warnings. Values
# the plan marks sensitive are never printed, only "(sensitive)": a saved
# plan's JSON holds them in clear text. Works with jq >= 1.6.

def actions_text:
  if . == ["update"] then "update in place"
  elif . == ["create"] then "create"
  elif . == ["delete"] then "destroy"
  elif (. == ["delete", "create"]) or (. == ["create", "delete"]) then "replace"
  else join(", ")
  end;

# Paths of the leaves of a value: scalars, lists and empty objects.
def leaves:
  if type == "object" and length > 0 then
    to_entries[] | .key as $k | .value | leaves | [$k] + .
  else [] end;

# Paths a mask (after_unknown, *_sensitive) marks true; a list with a true
# anywhere in it counts as a whole.
def marked:
  if type == "object" then to_entries[] | .key as $k | .value | marked | [$k] + .
  elif type == "array" then (if any(.. ; . == true) then [] else empty end)
  elif . == true then []
  else empty end;

def at($p): try getpath($p) catch null;

# Whether a mask marks $p or any object above it.
def masked($mask; $p): any(range(0; ($p | length) + 1); . as $i | ($mask | at($p[:$i])) == true);

def cell($v; $sensitive; $unknown):
  if $unknown then "(known after apply)"
  elif $sensitive then "(sensitive)"
  else ($v | tojson) as $s
    | (if ($s | length) > 120 then $s[:120] + "…" else $s end)
    | "`" + (gsub("`"; "'") | gsub("\\|"; "\\|")) + "`"
  end;

def prefix_of($p): .[:($p | length)] == $p;

# The attributes a change alters, as [{path, before, after, forces}] with
# the values rendered.
def changed_attributes:
  .change as $c
  | ($c.before // {}) as $b | ($c.after // {}) as $a | ($c.after_unknown // {}) as $u
  | ($c.before_sensitive // {}) as $bs | ($c.after_sensitive // {}) as $asens
  | [ [$b | leaves] + [$a | leaves] + [$u | marked] | unique | .[]
      | . as $p | select((($b | at($p)) != ($a | at($p))) or masked($u; $p)) ] as $changed
  | [ $changed[] as $p
      # A path above another that changed says nothing more (bmc: null
      # before, bmc.address after).
      | select(any($changed[]; . != $p and prefix_of($p)) | not)
      | { path: ($p | map(tostring) | join(".")),
          before: cell($b | at($p); masked($bs; $p); false),
          after: cell($a | at($p); masked($asens; $p); masked($u; $p)),
          forces: any(($c.replace_paths // [])[]; . as $r | $p | prefix_of($r)) } ];

def changes:
  [ (.resource_changes // [])[]
    | select(.mode == "managed")
    | select(.change.actions != ["no-op"] and .change.actions != ["read"]) ];

def outputs:
  [ (.output_changes // {}) | to_entries[] | select(.value.actions != ["no-op"]) ];

def failed_checks:
  [ (.checks // [])[] | select(.status == "fail")
    | . as $check
    | { address: $check.address.to_display,
        messages: [ ($check.instances // [])[] | (.problems // [])[] | .message ] } ];

def title: .address + (if .change.after.name? // .change.before.name? then " (" + (.change.after.name? // .change.before.name?) + ")" else "" end);

def markdown:
  changes as $changes | outputs as $outputs | failed_checks as $checks
  | ( if ($changes | length) + ($outputs | length) == 0 then
        "## No drift\n\nThe plan matches the configuration.\n"
      else
        "## Drift: \($changes | length) resource(s) differ from the configuration\n\n" +
        "An apply would make these changes. *now* is what the refresh read from the controller " +
        "(or the state, for what the controller does not return); *planned* is what the configuration wants.\n" +
        ( $changes | map(
            "\n### `\(title)`: \(.change.actions | actions_text)\n" +
            ( if .change.actions == ["create"] then
                "\nNot found on the controller (deleted outside Terraform?) or new in the configuration.\n"
              elif .change.actions == ["delete"] then
                "\nIn the state but no longer in the configuration.\n"
              else
                "\n| attribute | now | planned |\n|---|---|---|\n" +
                ( changed_attributes | map("| `\(.path)`\(if .forces then " (forces replacement)" else "" end) | \(.before) | \(.after) |\n") | join("") )
              end )
          ) | join("") ) +
        ( if ($outputs | length) > 0 then
            "\n### Outputs\n\n" + ($outputs | map("- `\(.key)`: \(.value.actions | actions_text)\n") | join(""))
          else "" end )
      end ) +
    ( if ($checks | length) > 0 then
        "\n## Warnings from checks\n\nThese do not fail the job.\n\n" +
        ( $checks | map("- `\(.address)`: " + (.messages | map(gsub("\n"; " ")) | join("; ")) + "\n") | join("") )
      else "" end )
  # jq -r ends the output with a newline of its own.
  | rtrimstr("\n");

# GitHub workflow commands: % CR LF escaped in messages, and : , in titles.
def esc_msg: gsub("%"; "%25") | gsub("\r"; "%0D") | gsub("\n"; "%0A");
def esc_prop: esc_msg | gsub(":"; "%3A") | gsub(","; "%2C");

def annotations:
  ( changes[]
    | "::error title=\("Drift: " + title | esc_prop)::\(.change.actions | actions_text)" +
      ( if .change.actions != ["create"] and .change.actions != ["delete"] then
          ": " + (changed_attributes | map(.path) | join(", "))
        else "" end | esc_msg) ),
  ( outputs[] | "::error title=\("Drift: output " + .key | esc_prop)::\(.value.actions | actions_text)" ),
  ( failed_checks[] | "::warning title=\(.address | esc_prop)::\(.messages | join("; ") | esc_msg)" );

if $format == "markdown" then markdown
elif $format == "annotations" then annotations
else error("--arg format must be markdown or annotations, not \($format)")
end
