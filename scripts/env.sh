#!/usr/bin/env bash
# Shared settings for the paycallback scripts. Source it; run it to print them.
# shellcheck disable=SC2034  # used by the scripts that source this file

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
VAR=$ROOT/var

MYSQL_PORT=${PAYCALLBACK_MYSQL_PORT:-3307}
REDIS_PORT=${PAYCALLBACK_REDIS_PORT:-6380}

MYSQL_DIR=$VAR/mysql
MYSQL_DATA=$MYSQL_DIR/data
MYSQL_SOCK=$MYSQL_DIR/mysqld.sock
MYSQL_PIDFILE=$MYSQL_DIR/mysqld.pid
MYSQL_LOG=$MYSQL_DIR/error.log

REDIS_DIR=$VAR/redis
REDIS_CONF=$REDIS_DIR/redis.conf
REDIS_PIDFILE=$REDIS_DIR/redis.pid
REDIS_LOG=$REDIS_DIR/redis.log

DB_USER=paycallback
DB_PASSWORD=paycallback
DB_NAME=paycallback
DB_TEST_NAME=paycallback_test

# mariadbd and mariadb-install-db live in /usr/sbin on Debian.
case ":$PATH:" in *:/usr/sbin:*) ;; *) PATH=$PATH:/usr/sbin ;; esac

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	for v in ROOT VAR MYSQL_PORT MYSQL_SOCK REDIS_PORT DB_USER DB_NAME DB_TEST_NAME; do
		printf '%s=%s\n' "$v" "${!v}"
	done
fi
