# bash completion for chainfs and chainfsctl (installed by make install). The words come from
# the programs' own --help (chainfsctl's from the daemon's table, control_cmds.h), so the
# completion cannot drift from what they accept.

_chainfsctl() {
	local cur=${COMP_WORDS[COMP_CWORD]} i words nonopt=0
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-s) ((i++)); nonopt=1 ;; # -s SOCKET stands for the mountpoint
		-*) ;;
		*) ((nonopt++)) ;;
		esac
	done
	if ((nonopt == 0)); then
		COMPREPLY=($(compgen -d -- "$cur") $(compgen -W "-s --json --help replay" -- "$cur"))
	elif [[ ${COMP_WORDS[1]} == replay ]]; then
		# replay FILE MOUNTPOINT
		((nonopt == 1)) && COMPREPLY=($(compgen -f -- "$cur")) || COMPREPLY=($(compgen -d -- "$cur"))
	elif ((nonopt == 2)) && [[ ${COMP_WORDS[COMP_CWORD - 1]} == record ]]; then
		COMPREPLY=($(compgen -W "start replace stop" -- "$cur"))
	elif ((nonopt == 3)) && [[ ${COMP_WORDS[COMP_CWORD - 1]} == start ||
		${COMP_WORDS[COMP_CWORD - 1]} == replace ]]; then
		COMPREPLY=($(compgen -f -- "$cur"))
	elif ((nonopt == 1)); then
		words=$(chainfsctl --commands 2>/dev/null)
		COMPREPLY=($(compgen -W "$words" -- "$cur"))
	else
		_chainfsctl_args
	fi
}

# A command's own words, from its usage line ("  fault add|remove|... (add op=OP ...)"): the
# alternatives and options after the command ("resolve [-l] [nofollow] PATH"), then, after
# "fault add", the rule's keys.
_chainfsctl_args() {
	local cmd=${COMP_WORDS[COMP_CWORD - nonopt + 1]} line words
	line=$(chainfsctl --help 2>/dev/null | awk -v c="$cmd" '$1 == c { $1 = ""; print }')
	if ((nonopt == 2)); then
		words=$(printf '%s\n' "${line%%(*}" | tr '|[] ' '\n\n\n\n' | grep -x -- '-*[a-z]*')
	elif [[ $cmd == fault && ${COMP_WORDS[COMP_CWORD - nonopt + 2]} == add ]]; then
		words=$(printf '%s\n' "${line#*(add }" | grep -o '[a-z]*=\|nowrite\|hold\|once\|every' | sort -u)
		compopt -o nospace 2>/dev/null
	fi
	COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F _chainfsctl chainfsctl

_chainfs() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} opts
	if [[ $prev == -o ]]; then
		opts=$(chainfs --help 2>/dev/null | grep -o -- '-o [a-z_]*=\?' | sed 's/^-o //' | sort -u)
		compopt -o nospace 2>/dev/null
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -f -- "$cur") $(compgen -W "-o -f -d --help --version --materialize --keep-ids --max-bytes= --spec-from" -- "$cur"))
}
complete -F _chainfs chainfs
