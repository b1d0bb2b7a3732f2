#!/usr/bin/env bash
# The drift check of drift.yml, which also runs by hand from the directory
# of the configuration (after terraform init):
#
#   /path/to/drift.sh
#
# It runs `terraform plan -detailed-exitcode` and exits as it does: 0 when
# the plan is empty, 2 when it has changes (drift), 1 on an error. On 0 and
# 2 it writes a Markdown summary of the changes and of failed check blocks
# to $GITHUB_STEP_SUMMARY (to stdout when that is unset) and prints them as
# GitHub annotations (::error for drift, ::warning for checks). Needs
# terraform (or $TERRAFORM) and jq; drift-summary.jq lies next to it.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tf=${TERRAFORM:-terraform}
summary=${GITHUB_STEP_SUMMARY:-/dev/stdout}

# A saved plan and its JSON hold sensitive values (the BMC password) in
# clear text: keep them out of the working directory, and never upload
# them as artifacts.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$tf" plan -detailed-exitcode -input=false -lock-timeout=5m -out="$tmp/plan"
code=$?
# Workflow commands must start a line: terraform may leave its colour
# reset escape on the last one.
echo
if [ "$code" -ne 0 ] && [ "$code" -ne 2 ]; then
	printf '## Drift check failed\n\n`terraform plan` exited %s: see the log of this step.\n' "$code" >>"$summary"
	echo "::error title=Drift check failed::terraform plan exited $code"
	exit 1
fi

if ! "$tf" show -json "$tmp/plan" >"$tmp/plan.json"; then
	echo "::error title=Drift check failed::terraform show -json could not read the plan"
	exit 1
fi
if ! jq -r --arg format markdown -f "$here/drift-summary.jq" "$tmp/plan.json" >>"$summary" ||
	! jq -r --arg format annotations -f "$here/drift-summary.jq" "$tmp/plan.json"; then
	echo "::error title=Drift check failed::jq could not render the plan"
	exit 1
fi
exit "$code"
