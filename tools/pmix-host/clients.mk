# The build the Slurm test (tools/slurm) and the multi-node test (tools/multinode) share: a PMIx
# client over Debian's libpmix (with common.c's canonical value text and client-util.c) and an
# MPI program, built into OUT (default: the including directory).
# The including Makefile sets CLIENT and MPIPROG (program names; the sources are NAME.c).
#   make [OUT=dir]    both programs
#   make clean
CC      ?= cc
MPICC   ?= mpicc
PKG     ?= pmix
CFLAGS  ?= -O2 -g
OUT     ?= .
WFLAGS   = -std=gnu11 -Wall -Wextra -Werror
HOST    := $(dir $(lastword $(MAKEFILE_LIST)))
PMIX_CFLAGS := $(shell pkg-config --cflags $(PKG))
PMIX_LIBS   := $(shell pkg-config --libs $(PKG))
PMIX_INCDIR := $(shell pkg-config --variable=includedir $(PKG))
PMIX_COMMON_H := $(firstword $(wildcard $(PMIX_INCDIR)/pmix_common.h $(PMIX_INCDIR)/pmix/pmix_common.h))
CLIENT_SRCS = $(HOST)common.c $(HOST)client-util.c

all: $(OUT)/$(CLIENT) $(OUT)/$(MPIPROG)

# the canonical value text is tools/pmix-host's (common.c, with its generated attribute table)
$(OUT)/pmix-attrs.h: $(HOST)gen-attrs.sh $(PMIX_COMMON_H)
	@mkdir -p $(OUT)
	$(HOST)gen-attrs.sh $(PMIX_COMMON_H) > $@.tmp && mv $@.tmp $@

$(OUT)/$(CLIENT): $(CLIENT).c $(CLIENT_SRCS) $(HOST)common.h $(HOST)client-util.h $(OUT)/pmix-attrs.h
	$(CC) $(WFLAGS) $(CFLAGS) $(PMIX_CFLAGS) -iquote $(OUT) -I$(HOST) -o $@ $(CLIENT).c $(CLIENT_SRCS) $(PMIX_LIBS)

$(OUT)/$(MPIPROG): $(MPIPROG).c
	@mkdir -p $(OUT)
	$(MPICC) $(WFLAGS) $(CFLAGS) -o $@ $(MPIPROG).c

clean:
	rm -f $(OUT)/$(CLIENT) $(OUT)/$(MPIPROG) $(OUT)/pmix-attrs.h

.PHONY: all clean
