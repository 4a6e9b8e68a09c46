SELECT user_id, ts, amount,
       sum(amount) OVER last_hour AS spend_1h,
       count(*)    OVER last_day  AS n_24h
FROM tx
WINDOW last_hour AS (PARTITION BY user_id ORDER BY ts
                     RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW),
       last_day  AS (PARTITION BY user_id ORDER BY ts
                     RANGE BETWEEN INTERVAL '1' DAY PRECEDING AND CURRENT ROW)
