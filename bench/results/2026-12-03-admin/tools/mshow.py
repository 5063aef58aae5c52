import sys
blocks=open(sys.argv[1]).read().split('## ')[1:]
t0=None
for b in blocks:
  lines=b.strip().split('\n'); t=float(lines[0]); t0=t0 or t
  d={}
  for l in lines[1:]:
    k,v=l.rsplit(' ',1); d[k]=float(v)
  rej={k[k.find('{'):]:v for k,v in d.items() if 'rejections' in k}
  print(f"{t-t0:5.1f} cpu={d.get('process_cpu_seconds_total',0):5.2f} q={d.get('thumbd_thumbnail_queue_length',0):4.0f} run={d.get('thumbd_thumbnail_jobs_running',0):.0f} infl={d.get('thumbd_http_requests_in_flight',0):4.0f} proc_n={d.get('thumbd_thumbnail_processing_seconds_count',0):4.0f} proc_s={d.get('thumbd_thumbnail_processing_seconds_sum',0):6.2f} src_n={d.get('thumbd_thumbnail_source_bytes_count',0):4.0f} rej={rej}")
