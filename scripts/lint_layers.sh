#!/usr/bin/env bash
# The controller's layers: a file of controller/ calls only functions defined in the files
# listed below it in controller/ctl_int.h's design note. This check reads that list
# (lines " *   name.c  ..."), finds the file that defines each function (a definition
# starts at column 0 and is not static), and reports every use of a function from a file
# listed below the one that defines it: a call, or its name taken as a callback, which
# is a call made later. A file of controller/ missing from the list fails too, so a new
# file is given its place.
#
# It reads the text, not a compiler's view: comments and string literals are blanked
# first, and a static function is private to its file whatever its name.
# Usage: scripts/lint_layers.sh [dir] (the controller directory; controller/ by default).
set -u
cd "$(dirname "$0")/.."
dir=${1:-controller}
exec perl -e '
use strict;
use warnings;
my ($dir) = @ARGV;
my $note = "$dir/ctl_int.h";
open my $fh, "<", $note or die "lint: $note: $!\n";
my (@order, %rank);
local $/;
my $head = <$fh>;
close $fh;
$head =~ s{\*/.*}{}s; # the design note is the first comment
for my $line (split /\n/, $head) {
    next unless $line =~ /^ \*\s+([A-Za-z0-9_]+\.c)\s/;
    die "lint: $note lists $1 twice\n" if exists $rank{$1};
    $rank{$1} = scalar @order;
    push @order, $1;
}
die "lint: no file list in $note\n" unless @order;

my $status = 0;
opendir my $dh, $dir or die "lint: $dir: $!\n";
my @files = sort grep { /\.c$/ } readdir $dh;
closedir $dh;
my %present = map { $_ => 1 } @files;
for my $f (@files) {
    next if exists $rank{$f};
    print "lint: $dir/$f is not in the file list of $note: give it its layer\n";
    $status = 1;
}
for my $f (@order) {
    next if $present{$f};
    print "lint: $note lists $f, which does not exist\n";
    $status = 1;
}

# Comments and literals blanked, lines kept, so line numbers stay true.
my (%src, %def, %own);
for my $f (@files) {
    open my $in, "<", "$dir/$f" or die "lint: $dir/$f: $!\n";
    my $s = <$in>;
    close $in;
    $s =~ s{/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\x27(?:\\.|[^\x27\\\n])*\x27}{
        my $m = $&; ($m =~ /^["\x27]/ ? "\"\"" : " ") . ("\n" x ($m =~ tr/\n//))
    }gse;
    $src{$f} = $s;
    while ($s =~ /^([^#\s}{;][^;{}()\n=]*?)\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*\{/mg) {
        my ($type, $name) = ($1, $2);
        $own{$f}{$name} = 1;
        next if $type =~ /\bstatic\b/;
        if (exists $def{$name} && $def{$name} ne $f) {
            print "lint: $name is defined in both $dir/$def{$name} and $dir/$f\n";
            $status = 1;
        }
        $def{$name} = $f;
    }
}

for my $f (@files) {
    next unless exists $rank{$f};
    my $n = 0;
    for my $line (split /\n/, $src{$f}, -1) {
        $n++;
        my %seen;
        while ($line =~ /\b([A-Za-z_]\w*)\b/g) {
            my $name = $1;
            my $home = $def{$name};
            next if !defined $home || $home eq $f || $own{$f}{$name} || $seen{$name}++;
            next unless exists $rank{$home} && $rank{$home} < $rank{$f};
            print "lint: $dir/$f:$n calls $name, defined in $dir/$home, which is above it in $note\n";
            $status = 1;
        }
    }
}
exit $status;
' "$dir"
